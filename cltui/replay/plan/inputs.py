"""What a step does with each memory object before the kernel runs: load its captured Pre
dump, carry the state the range left (verified or reloaded where the capture shows a host
change), or settle the host transfers since its last use.  The decisions are the mode's rule
(:mod:`cltui.replay.modes`); this module gathers its facts and writes the plan's entries."""

from __future__ import annotations

from cltui.capture.model import Enqueue
from cltui.replay.engine.schema import LoadSpec
from cltui.replay.modes import input_rule, input_source
from cltui.replay.plan.base import Obj, Pending, PlanState, StepIO
from cltui.replay.plan.checks import check, check_before
from cltui.replay.plan.transfers import (
    _NO_PATTERN,
    _pre_state,
    _short,
    change,
    changed_by,
    check_ops,
    covers,
    decide,
    host_change,
    replay_ops,
    settle,
)


def inputs(st: PlanState, enq: Enqueue, o: Obj, io: StepIO) -> None:
    """The loads and pre-checks of the object before enqueue ``enq``."""
    first_use = o.mid not in st.state
    moved = st.pending.pop(o.mid, [])
    source = input_source(st.mode, first_use=first_use, transfers=bool(moved))
    if source == "transfers":
        settle(st, enq, o, moved, io)
    elif source == "fresh":
        _fresh(st, enq.number, o, moved, io)
    else:
        _carried(st, enq.number, o, io)


def _fresh(st: PlanState, n: int, o: Obj, moved: list[Pending], io: StepIO) -> None:
    """The object's first use in the range (or isolated mode): its Pre dump is the input;
    the transfers before it are in that input when there is one, except where they can
    be replayed and write the whole object (see :meth:`_fresh_ops`)."""
    check_ops(st, o, moved)
    if _fresh_ops(st, o, moved, io):
        return
    covered = o.pre is not None and not o.pre.hashed
    for p in moved:
        op = p.spec["op"]
        if covered:
            decide(st, p, o.mid, "input", "")
        elif p.runnable and op is not None and op["op"] != "fill":
            decide(st, p, o.mid, "op", "")  # a copy into a fresh object
        else:  # the reason its kind has (a fill's pattern, a write's data, a source)
            fill = op is not None and op["op"] == "fill"
            decide(st, p, o.mid, None, p.spec["why"] or (_NO_PATTERN if fill else ""))
            st.taint.setdefault(o.mid, p.spec["enqueue"])
    if input_rule(st.mode, "fresh", pre=_pre_state(o.pre)).load == "input":
        assert o.pre is not None
        load: LoadSpec = {
            "mem": o.mid,
            "data": st.key(o.pre.path),
            "why": "input",
            "note": "",
        }
        io.loads.append(load)
    elif o.pre is None and not _filled_whole(st, o, moved):  # unknown: what it held
        arg = f"argument {o.margs[0].index} ({st.memory[o.mid]['label']})"
        why = (
            f"damaged dump: {o.pre_damage}"
            if o.pre_damage is not None
            else f"no Pre dump of {arg} at enqueue {n}"
        )
        st.unknown[o.mid] = why
        what = (
            f"the Pre dump of {arg} is damaged, not loaded"
            if o.pre_damage
            else (f"no Pre dump of {arg}")
        )
        st.notes.append(
            f"enqueue {n}: {what}; it starts zero-filled, and what depends on it is "
            "unchecked (its input is unknown)"
        )
    else:
        st.notes.append(
            f"enqueue {n}: only a hash Pre dump of argument {o.margs[0].index} "
            f"({st.memory[o.mid]['label']}); it starts zero-filled"
        )


def _filled_whole(st: PlanState, o: Obj, moved: list[Pending]) -> bool:
    """A transfer replayed as an operation wrote every byte of the object (a whole copy
    into it): its state is known without a Pre dump."""
    size = int(st.memory[o.mid]["size"])
    return any(p.spec["replayed"] == "op" and p.spec["op"] is not None
               and covers(p.spec["op"], size) for p in moved)  # fmt: skip


def _fresh_ops(st: PlanState, o: Obj, moved: list[Pending], io: StepIO) -> bool:
    """Transfers into an object before its first use in the range that can all be
    replayed and that write all of it (a copy of a whole object of the range) are
    replayed as operations, as after a use (the ``transfers`` rule: checked against the
    captured Pre dump, in chain mode reloaded where it differs), not taken from that
    dump.  False when they are not."""
    size = int(st.memory[o.mid]["size"])
    ops = [p.spec["op"] for p in moved if p.runnable]
    if not moved or len(ops) < len(moved) or not any(op and covers(op, size) for op in ops):
        return False
    rule = input_rule(st.mode, "transfers", pre=_pre_state(o.pre), transfers_replayable=True)
    names = ", ".join(f"{p.spec['enqueue']} {_short(p.spec['function'])}" for p in moved)
    replay_ops(st, o, moved, rule, names, io)
    return True


def _carried(st: PlanState, n: int, o: Obj, io: StepIO) -> None:
    """The state the range left, nothing logged in between: verified where the capture
    has no Post dump of the last use, a host change recorded where the dumps show one."""
    prev_n, prev_post = st.state[o.mid]
    if o.mid in st.unknown:  # the state carried is unknown: verified against the Pre
        prev_post = None  # dump (and reloaded where the mode allows), as after no Post
    rule = input_rule(
        st.mode,
        "carried",
        pre=_pre_state(o.pre),
        previous_post=prev_post is not None,
        changed=host_change(st, prev_post, o.pre),
    )
    if rule.precheck and rule.action is None:
        assert o.pre is not None
        # the capture does not say what enqueue prev_n left: verify at run time
        note = (
            f"no Post dump of enqueue {prev_n}: the replayed state is compared "
            f"with the Pre dump of enqueue {n}"
        )
        io.prechecks.append(check(st, o, o.pre, note=note))
        if rule.load is not None:
            io.loads.append({"mem": o.mid, "data": st.key(o.pre.path), "why": rule.load,
                             "note": note + " and reloaded if it differs"})  # fmt: skip
    elif rule.action is not None:
        assert o.pre is not None
        by = changed_by(st, o.mid, prev_n, n)
        st.changes.append(change(st, n, o, prev_n, by, rule.action, []))
        if rule.action == "unreplayed":  # no bytes to put back: checks after it
            st.taint.setdefault(o.mid, prev_n + 1)  # are marked
        why = f"changed between enqueue {prev_n} and {n}" + (
            f" by {', '.join(by)}" if by else " outside the replayed kernels"
        )
        io.prechecks.append(check_before(st, n, o))
        if rule.load is not None:
            io.loads.append({"mem": o.mid, "data": st.key(o.pre.path), "why": rule.load,
                             "note": why})  # fmt: skip
