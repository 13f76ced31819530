"""What a step does with each memory object before the kernel runs: load its captured Pre
dump, carry the state the range left (verified or reloaded where the capture shows a host
change), or settle the host transfers since its last use.  The decisions are the mode's rule
(:mod:`cltui.replay.modes`); this module gathers its facts and writes the plan's entries."""

from __future__ import annotations

from cltui.capture.model import Enqueue
from cltui.replay.engine.schema import LoadSpec
from cltui.replay.modes import input_rule, input_source
from cltui.replay.plan.base import Obj, Pending, StepIO
from cltui.replay.plan.transfers import _NO_PATTERN, _pre_state, _short, _Transfers, covers


class _Inputs(_Transfers):
    def inputs(self, enq: Enqueue, o: Obj, io: StepIO) -> None:
        """The loads and pre-checks of the object before enqueue ``enq``."""
        first_use = o.mid not in self.state
        moved = self.pending.pop(o.mid, [])
        source = input_source(self.mode, first_use=first_use, transfers=bool(moved))
        if source == "transfers":
            self.settle(enq, o, moved, io)
        elif source == "fresh":
            self._fresh(enq.number, o, moved, io)
        else:
            self._carried(enq.number, o, io)

    def _fresh(self, n: int, o: Obj, moved: list[Pending], io: StepIO) -> None:
        """The object's first use in the range (or isolated mode): its Pre dump is the input;
        the transfers before it are in that input when there is one, except where they can
        be replayed and write the whole object (see :meth:`_fresh_ops`)."""
        self._check_ops(o, moved)
        if self._fresh_ops(o, moved, io):
            return
        covered = o.pre is not None and not o.pre.hashed
        for p in moved:
            op = p.spec["op"]
            if covered:
                self.decide(p, o.mid, "input", "")
            elif p.runnable and op is not None and op["op"] != "fill":
                self.decide(p, o.mid, "op", "")  # a copy into a fresh object
            else:  # the reason its kind has (a fill's pattern, a write's data, a source)
                fill = op is not None and op["op"] == "fill"
                self.decide(p, o.mid, None, p.spec["why"] or (_NO_PATTERN if fill else ""))
                self.taint.setdefault(o.mid, p.spec["enqueue"])
        if input_rule(self.mode, "fresh", pre=_pre_state(o.pre)).load == "input":
            assert o.pre is not None
            load: LoadSpec = {
                "mem": o.mid,
                "data": self.key(o.pre.path),
                "why": "input",
                "note": "",
            }
            io.loads.append(load)
        elif o.pre is None and not self._filled_whole(o, moved):  # unknown: what it held
            arg = f"argument {o.margs[0].index} ({self.memory[o.mid]['label']})"
            why = (
                f"damaged dump: {o.pre_damage}"
                if o.pre_damage is not None
                else f"no Pre dump of {arg} at enqueue {n}"
            )
            self.unknown[o.mid] = why
            what = f"the Pre dump of {arg} is damaged, not loaded" if o.pre_damage else (
                f"no Pre dump of {arg}"
            )
            self.notes.append(
                f"enqueue {n}: {what}; it starts zero-filled, and what depends on it is "
                "unchecked (its input is unknown)"
            )
        else:
            self.notes.append(
                f"enqueue {n}: only a hash Pre dump of argument {o.margs[0].index} "
                f"({self.memory[o.mid]['label']}); it starts zero-filled"
            )

    def _filled_whole(self, o: Obj, moved: list[Pending]) -> bool:
        """A transfer replayed as an operation wrote every byte of the object (a whole copy
        into it): its state is known without a Pre dump."""
        size = int(self.memory[o.mid]["size"])
        return any(p.spec["replayed"] == "op" and p.spec["op"] is not None
                   and covers(p.spec["op"], size) for p in moved)  # fmt: skip

    def _fresh_ops(self, o: Obj, moved: list[Pending], io: StepIO) -> bool:
        """Transfers into an object before its first use in the range that can all be
        replayed and that write all of it (a copy of a whole object of the range) are
        replayed as operations, as after a use (the ``transfers`` rule: checked against the
        captured Pre dump, in chain mode reloaded where it differs), not taken from that
        dump.  False when they are not."""
        size = int(self.memory[o.mid]["size"])
        ops = [p.spec["op"] for p in moved if p.runnable]
        if not moved or len(ops) < len(moved) or not any(op and covers(op, size) for op in ops):
            return False
        rule = input_rule(self.mode, "transfers", pre=_pre_state(o.pre), transfers_replayable=True)
        names = ", ".join(f"{p.spec['enqueue']} {_short(p.spec['function'])}" for p in moved)
        self._replay_ops(o, moved, rule, names, io)
        return True

    def _carried(self, n: int, o: Obj, io: StepIO) -> None:
        """The state the range left, nothing logged in between: verified where the capture
        has no Post dump of the last use, a host change recorded where the dumps show one."""
        prev_n, prev_post = self.state[o.mid]
        if o.mid in self.unknown:  # the state carried is unknown: verified against the Pre
            prev_post = None  # dump (and reloaded where the mode allows), as after no Post
        rule = input_rule(
            self.mode,
            "carried",
            pre=_pre_state(o.pre),
            previous_post=prev_post is not None,
            changed=self.host_change(prev_post, o.pre),
        )
        if rule.precheck and rule.action is None:
            assert o.pre is not None
            # the capture does not say what enqueue prev_n left: verify at run time
            note = (
                f"no Post dump of enqueue {prev_n}: the replayed state is compared "
                f"with the Pre dump of enqueue {n}"
            )
            io.prechecks.append(self.check(o, o.pre, note=note))
            if rule.load is not None:
                io.loads.append({"mem": o.mid, "data": self.key(o.pre.path), "why": rule.load,
                                 "note": note + " and reloaded if it differs"})  # fmt: skip
        elif rule.action is not None:
            assert o.pre is not None
            by = self.changed_by(o.mid, prev_n, n)
            self.changes.append(self.change(n, o, prev_n, by, rule.action, []))
            if rule.action == "unreplayed":  # no bytes to put back: checks after it
                self.taint.setdefault(o.mid, prev_n + 1)  # are marked
            why = f"changed between enqueue {prev_n} and {n}" + (
                f" by {', '.join(by)}" if by else " outside the replayed kernels"
            )
            io.prechecks.append(self.check_before(n, o))
            if rule.load is not None:
                io.loads.append({"mem": o.mid, "data": self.key(o.pre.path), "why": rule.load,
                                 "note": why})  # fmt: skip
