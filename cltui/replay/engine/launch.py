"""The launches: the schedule made before them, the validation run (loads, a wait per
launch, checks) and the timing repetitions (launches back to back, inputs restored between
repetitions).  The :class:`Launcher` part of :class:`.core.Engine`.

The timed loops (:meth:`Launcher.repeat_launches`, :meth:`Launcher.probe_repetitions`)
are the hot path: between two launches they only call the bound reloads and appends the
schedule prepared (``Timed`` rows); add nothing there."""

from __future__ import annotations

import functools
import gc
import time
from typing import TYPE_CHECKING

from . import compare as _compare
from .base import EngineError, EngineOptions, HostArray, Restore, _cl_msg, _Mem, _replays, _safe
from .checks import Checker
from .memory import DeviceMemory
from .preflight import Preflight
from .schedule import Schedule, Timed, first_uses, geometry, profile, settle_events
from .schema import ProbeOutput, ProbeResult, StepSpec

if TYPE_CHECKING:
    import pyopencl as cl


class Launcher:
    """The launch loops (see the module doc) over the device's memory, the checker and the
    pre-flight; it owns each step's kernel (None: it does not run here), the steps whose
    kernel could not be set up, the last run's schedule and the timed loop's rows."""

    def __init__(
        self,
        opts: EngineOptions,
        notes: list[str],
        memory: DeviceMemory,
        checker: Checker,
        preflight: Preflight,
    ) -> None:
        self.plan = opts.plan
        self.device = opts.device
        self.progress = opts.progress
        self.save_dir = opts.save_dir
        self.notes = notes  # the engine's notes (one list for every part)
        self.memory = memory
        self.checker = checker
        self.preflight = preflight
        self.queue = memory.queue
        self.kernels: list[cl.Kernel | None] = []  # None: the step cannot run on this device
        self.set_up_failed: dict[int, str] = {}  # step index -> why its kernel was not set up
        self.sched = Schedule([])  # the last run's (repeat_launches times it again)
        self.timed: list[Timed] = []
        self.timed_steps: list[int] = []  # the step of each timed launch (launched steps)
        self.hoisted: list[Restore] = []  # the restores before each repetition

    def launch_times(self) -> list[list[int]]:
        """Per step, the device time (start to end, ns) of every launch so far: the
        validation run's first, then one per timing repetition (:meth:`repeat_launches`),
        what an A/B comparison pairs repetition by repetition."""
        return [[p[3] - p[2] for p in map(profile, evs)] for evs in self.sched.events]

    def schedule(self) -> Schedule:
        """Everything precomputed before the launch loops (see :class:`.schedule.Schedule`)."""
        steps = self.plan["steps"]
        first_use = first_uses(steps)
        sched = Schedule(steps)
        for i, st in enumerate(steps):
            row: list[tuple[_Mem, HostArray, str]] = []
            for ld in st.get("loads", []):
                if ld["mem"] not in self.memory.mems:  # not made here: its steps cannot run
                    continue
                m = self.memory.mems[ld["mem"]]
                host = self.memory.host_input(ld, m)
                kind = str(ld.get("why", "input"))
                if kind == "input" and first_use.get(ld["mem"]) == i:
                    sched.hoisted.append((m, host))
                    sched.hoisted_at.add((i, len(row)))
                row.append((m, host, kind))
            sched.loads.append(row)
        mems, readback = self.memory.mems, self.memory.readback
        for i, st in enumerate(steps):
            run = self._runs(i)  # a step that is not launched reads nothing back
            sched.reads.append([(mems[c["mem"]], readback(mems[c["mem"]]))
                                for c in st.get("checks", []) if run])  # fmt: skip
            sched.prereads.append([(mems[c["mem"]], readback(mems[c["mem"]]))
                                   for c in st.get("prechecks", []) if run])  # fmt: skip
        sched.geoms = [geometry(st) for st in steps]
        # host-side transfers the plan replays before a step (fills, copies): bound calls
        sched.ops = [
            [self.memory.transfer_op(st, t) for t in st.get("transfers", [])
             if _replays(t) and self._made(t["mem"], (t["op"] or {}).get("src"))]
            for st in steps
        ]  # fmt: skip
        sched.events = [[] for _ in steps]
        sched.host_ns = [[] for _ in steps]
        sched.inloop = [[] for _ in steps]
        sched.fired = [[False] * len(row) for row in sched.loads]
        return sched

    # ---- the validation run -------------------------------------------------

    def validate(self, sched: Schedule) -> None:
        """The validation run: loads at each step, read-backs, a wait per launch, the
        step's checks sent with its ``step_done`` (so a later crash keeps them)."""
        n = len(sched.steps)
        for i in range(n):
            self.progress({"type": "step", "i": i, "n": n, "enqueue": sched.steps[i]["enqueue"]})
            self._load_step(sched, i)
            if i in self.set_up_failed:
                sched.pres.append([])  # its error is the run's; it has no result
                sched.chks.append([])
                continue
            if i in self.preflight.cannot or not self._launch_and_wait(sched, i):
                self._not_launched(sched, i)  # (or the driver refused it: _refused)
                continue
            self._check_step(sched, i)
        self.queue.finish()
        self.notes.extend(self.preflight.accepted_notes())

    def _runs(self, i: int) -> bool:
        """Step ``i`` is launched (it can run here and its kernel was set up)."""
        return i not in self.preflight.cannot and i not in self.set_up_failed

    def _made(self, *mems: str | None) -> bool:
        """Every named memory object was made on this device."""
        return all(m is None or m in self.memory.mems for m in mems)

    def _not_launched(self, sched: Schedule, i: int) -> None:
        """Step ``i`` cannot run here: its loads are done (later steps read them), it is not
        launched, its checks say why; its ``step_done`` says so."""
        sched.pres.append([])
        sched.chks.append(self.preflight.cannot_run_checks(i))
        self._step_done(sched, i, "cannot-run")

    def _step_done(self, sched: Schedule, i: int, status: str) -> None:
        """Step ``i``'s ``step_done`` event: its status, checks and pre-checks (and why it
        cannot run, for a step that did not)."""
        st = sched.steps[i]
        step = {"enqueue": st["enqueue"], "kernel": st["kernel"], "status": status,
                "checks": sched.chks[i], "prechecks": sched.pres[i]}  # fmt: skip
        if status == "cannot-run":
            step["cannot_run"] = self.preflight.cannot[i]
        self.progress({"type": "step_done", "i": i, "enqueue": st["enqueue"], "step": step})

    def _load_step(self, sched: Schedule, i: int) -> None:
        """Before step ``i``: its replayed transfers, the read-backs of its pre-checks and
        its loads (a ``verify`` load only where the state differs)."""
        for op in sched.ops[i]:
            op()
        prereads, fired = sched.prereads[i], sched.fired[i]
        for m, host in prereads:
            self.memory.read(m, host)
        for j, (m, host, kind) in enumerate(sched.loads[i]):
            if kind == "verify":
                fired[j] = self.checker.verify(sched.steps[i], m, host, prereads)
            else:
                self.memory.write(m, host)
                fired[j] = True
            if fired[j] and (i, j) not in sched.hoisted_at:
                sched.inloop[i].append((m, host))

    def _launch_and_wait(self, sched: Schedule, i: int) -> bool:
        """Launch step ``i`` (its host time recorded), read back what its checks compare and
        wait: a failure names the enqueue.  False: the driver refused a launch the
        pre-flight left to it (``at_launch``), and the step cannot run."""
        import pyopencl as cl

        st = sched.steps[i]
        g, lws, off = sched.geoms[i]
        launch, q, kern = cl.enqueue_nd_range_kernel, self.queue, self.kernels[i]
        assert kern is not None  # a step that cannot run is not launched
        clock = time.perf_counter_ns  # bound: no lookup inside the timed call
        t0 = clock()
        try:
            ev = launch(q, kern, g, lws, off)
        except cl.Error as exc:
            refusable = i in self.preflight.at_launch
            if refusable and exc.code == cl.status_code.INVALID_WORK_GROUP_SIZE:
                self.kernels[i] = None
                self.preflight.refused(i, "CL_INVALID_WORK_GROUP_SIZE", self.set_up_failed)
                return False
            raise EngineError(
                f"enqueue {st['enqueue']} ({st['kernel']}): launch failed: {_cl_msg(exc)}",
                st["enqueue"],
            ) from None
        t1 = clock()
        sched.events[i].append(ev)
        sched.host_ns[i].append(t1 - t0)
        for m, host in sched.reads[i]:
            self.memory.read(m, host)
        try:
            ev.wait()
            self.queue.finish()  # its read-backs too: the step is checked now
        except cl.Error as exc:
            raise EngineError(
                f"enqueue {st['enqueue']} ({st['kernel']}) failed on the device: {_cl_msg(exc)}",
                st["enqueue"],
            ) from None
        return True

    def _check_step(self, sched: Schedule, i: int) -> None:
        """Step ``i``'s checks, sent with its ``step_done``: a later crash or hang of the
        process still leaves the verdicts of the steps that finished."""
        st = sched.steps[i]
        sched.pres.append(
            [
                self.checker.check(st, c, host, "pre")
                for c, (_m, host) in zip(st.get("prechecks", []), sched.prereads[i], strict=True)
            ]
        )
        sched.chks.append(
            [
                self.checker.check(st, c, host, "post")
                for c, (_m, host) in zip(st.get("checks", []), sched.reads[i], strict=True)
            ]
        )
        done_ok = all(c["status"] in ("equal", "within", "unchecked") for c in sched.chks[i])
        self._step_done(sched, i, "pass" if done_ok else "fail")

    # ---- the timing repetitions ------------------------------------------------

    def prepare_timing(self) -> None:
        """What timing repetitions run: reloads inside the loop are device-side copies from
        staged inputs; the restores before each repetition too, except on a CPU device."""
        sched = self.sched
        staged: dict[int, Restore] = {}

        def restorer(m: _Mem, host: HostArray) -> Restore:
            key = id(host)
            if key not in staged:
                staged[key] = self.memory.restorer(m, host)
            return staged[key]

        self.timed, self.timed_steps = [], []
        carried: list[Restore] = []  # the restores of steps not launched go with the next
        for i, kern in enumerate(self.kernels):
            restores = [*sched.ops[i], *(restorer(m, h) for m, h in sched.inloop[i])]
            if kern is None:
                carried += restores
                continue
            self.timed.append((kern, *sched.geoms[i], [*carried, *restores] or None,
                                sched.events[i].append, sched.host_ns[i].append))  # fmt: skip
            self.timed_steps.append(i)
            carried = []
        # before each repetition: on a CPU device a host write (a memcpy either way); a
        # device-side copy there made the launches after it ~8 % slower on PoCL (measured by
        # benchmarks/bench_replay_vs_raw.py); on a GPU the staged device-side copy
        if "CPU" in str(self.device.get("type", "")):
            self.hoisted = [functools.partial(self.memory.write, m, h) for m, h in sched.hoisted]
        else:
            self.hoisted = [restorer(m, h) for m, h in sched.hoisted]

    def repeat_launches(self, count: int) -> list[int]:
        """After :meth:`run`: ``count`` more timing repetitions (inputs restored, then the
        launches back to back); the host time of each repetition's launch loop in ns."""
        import pyopencl as cl

        if count <= 0:
            return []
        if not self.timed:
            self.prepare_timing()
        q = self.queue
        launch = cl.enqueue_nd_range_kernel
        clock = time.perf_counter_ns
        timed = self.timed
        out: list[int] = []
        paused = gc.isenabled()
        gc.disable()  # no collector pause inside the timed loops (as timeit does)
        event_lists = self.sched.events
        try:
            settle_events(event_lists)
            for _rep in range(count):
                for restore in self.hoisted:
                    restore()
                q.finish()  # restores happen between repetitions, not between launches
                r0 = clock()
                for kern, g, lws, off, reloads, add_event, add_ns in timed:
                    if reloads:
                        for restore in reloads:
                            restore()
                    t0 = clock()
                    ev = launch(q, kern, g, lws, off)
                    add_ns(clock() - t0)
                    add_event(ev)
                out.append(clock() - r0)
                q.finish()
                # keep the four profiling counters, not the events: thousands of live
                # events made each launch of a 35-kernel range ~3 us slower on PoCL
                settle_events(event_lists)
        finally:
            if paused:
                gc.enable()
        return out

    def probe_repetitions(
        self, count: int, reads: list[list[tuple[_Mem, HostArray]]]
    ) -> tuple[list[int], ProbeResult]:
        """Timing repetitions that also read back every checked object after its launch.

        The validation run's read-backs are repetition 0.  A repetition's bytes that equal
        repetition 0's are not saved again (its file is repetition 0's); others are saved
        as ``<enqueue>_<mem>.r<rep>.bin``.  The read-backs are enqueued after each launch
        (so later launches wait for them on the in-order queue); the host time of the
        read-back calls is left out of the loop timer, and the result is flagged
        ``loop.probe``.  Returns (loop ns per repetition, the ``probe`` result entry).
        """
        steps = self.plan["steps"]
        assert self.save_dir is not None
        self.save_dir.mkdir(parents=True, exist_ok=True)
        files = [
            [[str(self.save_dir / f"{st['enqueue']}_{_safe(c['mem'])}.bin")]  # by _check
             for c in st.get("checks", [])]
            for st in steps
        ]  # fmt: skip
        if count > 0 and not self.timed:
            self.prepare_timing()
        bufs = [[(m, self.memory.readback(m)) for m, _h in reads[i]] for i in range(len(steps))]
        out: list[int] = []
        for rep in range(1, count + 1):
            out.append(self._probed_repetition(bufs))
            self.queue.finish()
            self._save_probed(steps, rep, bufs, reads, files)
        outputs: list[ProbeOutput] = [
            {"enqueue": st["enqueue"], "mem": c["mem"], "files": files[i][k]}
            for i, st in enumerate(steps)
            if self._runs(i)
            for k, c in enumerate(st.get("checks", []))
        ]
        return out, {"runs": count + 1, "outputs": outputs}

    def _probed_repetition(self, bufs: list[list[tuple[_Mem, HostArray]]]) -> int:
        """One timing repetition with a read-back after each launch; the loop's host time
        without the read-back calls."""
        import pyopencl as cl

        q = self.queue
        launch = cl.enqueue_nd_range_kernel
        clock = time.perf_counter_ns
        read = self.memory.read
        for restore in self.hoisted:
            restore()
        q.finish()
        r0 = clock()
        spent = 0
        for k, (kern, g, lws, off, reloads, add_event, add_ns) in enumerate(self.timed):
            i = self.timed_steps[k]
            for restore in reloads or ():
                restore()
            t0 = clock()
            ev = launch(q, kern, g, lws, off)
            t1 = clock()
            add_ns(t1 - t0)
            add_event(ev)
            for m, buf in bufs[i]:
                read(m, buf)
            spent += clock() - t1
        return clock() - r0 - spent

    def _save_probed(
        self,
        steps: list[StepSpec],
        rep: int,
        bufs: list[list[tuple[_Mem, HostArray]]],
        reads: list[list[tuple[_Mem, HostArray]]],
        files: list[list[list[str]]],
    ) -> None:
        """Repetition ``rep``'s read-backs: equal to repetition 0's, its file; else saved."""
        assert self.save_dir is not None
        for i, st in enumerate(steps):
            for k, (_m, buf) in enumerate(bufs[i]):
                if _compare.bytes_equal(buf, reads[i][k][1]):
                    files[i][k].append(files[i][k][0])
                    continue
                mem = _safe(st["checks"][k]["mem"])
                path = self.save_dir / f"{st['enqueue']}_{mem}.r{rep}.bin"
                buf.tofile(path)
                files[i][k].append(str(path))
