"""Checks: comparing what a step wrote with the capture (element-wise, or by the layer's hash
on the device), and verifying a load.  The :class:`Checker` part of :class:`.core.Engine`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from . import compare as _compare
from .base import EngineError, EngineOptions, HostArray, _cl_msg, _Mem, _safe
from .hashing import DeviceHash
from .memory import DeviceMemory
from .preflight import Preflight
from .schema import CheckResult, CheckSpec, CompareResult, Status, StepSpec

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor


class Checker:
    """Checks: comparing what a step wrote with the capture (see the module doc), over the
    device's memory, its hash and the pre-flight's marks; it owns the background writer of
    the outputs it saves."""

    def __init__(
        self, opts: EngineOptions, memory: DeviceMemory, hashing: DeviceHash, preflight: Preflight
    ) -> None:
        self.loader = opts.loader
        self.tol = opts.tol
        self.arg_tol = opts.arg_tol
        self.save_dir = opts.save_dir
        self.memory = memory
        self.hashing = hashing
        self.preflight = preflight
        self.queue = memory.queue
        self._writer: ThreadPoolExecutor | None = None  # saves outputs
        self._writes: list[Future[None]] = []

    def finish_saves(self) -> None:
        """Wait for the outputs being saved; a failed save fails the run (as it did when
        outputs were written inline)."""
        if self._writer is None:
            return
        self._writer.shutdown(wait=True)
        self._writer = None
        for fut in self._writes:
            fut.result()
        self._writes = []

    def verify(
        self,
        step: StepSpec,
        m: _Mem,
        host: HostArray,
        prereads: list[tuple[_Mem, HostArray]],
    ) -> bool:
        """A ``verify`` load: reload only if the replayed state differs from the captured Pre."""
        import pyopencl as cl

        mine = next((buf for pm, buf in prereads if pm is m), None)
        if mine is None:  # no pre-check of this object: read it now
            mine = np.empty(m.size, np.uint8)
            self.memory.read(m, mine)
        try:
            self.queue.finish()
        except cl.Error as exc:
            raise EngineError(
                f"enqueue {step['enqueue']}: reading the state before it failed: {_cl_msg(exc)}",
                step["enqueue"],
            ) from None
        if _compare.bytes_equal(mine, host):
            return False
        self.memory.write(m, host)
        return True

    def check(self, step: StepSpec, c: CheckSpec, host: HostArray, when: str) -> CheckResult:
        """One check of ``host`` (what the step left in ``c["mem"]``, or held before it:
        ``when`` pre) against the capture; the output is saved (post) when asked."""
        output = None
        if self.save_dir is not None and when == "post":
            output = self._save(step, c, host)
        tol = self.tol.merged(c.get("tol"))
        for a in c.get("args", []):
            tol = tol.merged(self.arg_tol.get(int(a)))
        status, summary, result = self._judge(step, c, host, tol)
        out: CheckResult = {
            "mem": c["mem"],
            "args": c.get("args", []),
            "label": c.get("label", c["mem"]),
            "dtype": c.get("dtype"),
            "shape": c.get("shape"),
            "output": output,
            "tolerance": tol.to_dict(),
            "data": c.get("data"),
            "status": status,
        }
        if result is not None:
            out["result"] = result
        out["summary"] = summary
        at = c.get("after_unreplayed")
        if at is not None:
            out["after_unreplayed"] = int(at)
            out["summary"] = f"after unreplayed host write at {int(at)}: {summary}"
        after = self.preflight.marks.get(int(step["enqueue"]), {}).get(when, {}).get(c["mem"])
        if after is not None:  # it follows what an enqueue that could not run left
            out["after_cannot_run"] = after
            out["summary"] = f"after enqueue {after}, which cannot run here: {out['summary']}"
        return out

    def _save(self, step: StepSpec, c: CheckSpec, host: HostArray) -> str:
        """Save a replayed output as ``<enqueue>_<mem>.bin`` (in the background); its path."""
        assert self.save_dir is not None
        self.save_dir.mkdir(parents=True, exist_ok=True)
        path = self.save_dir / f"{step['enqueue']}_{_safe(c['mem'])}.bin"
        if self._writer is None:
            from concurrent.futures import ThreadPoolExecutor

            self._writer = ThreadPoolExecutor(1, thread_name_prefix="cltui-save")
        # written while the next checks compare (creating a file costs ~1 ms here)
        self._writes.append(self._writer.submit(host.tofile, path))
        return str(path)

    def _judge(
        self, step: StepSpec, c: CheckSpec, host: HostArray, tol: _compare.Tolerance
    ) -> tuple[Status, str, CompareResult | None]:
        """(status, summary, the element-wise result when there was data to compare)."""
        data = c.get("data")
        if data:
            res = _compare.compare_bytes(
                self.loader(data), host, c.get("dtype"), tol, c.get("shape")
            )
            return res.status, res.summary(), res.to_dict()
        hashed = c.get("hash64")
        if hashed:
            got, why = self.hashing.hash64(host, step["enqueue"])
            if got is None:
                return "unchecked", f"the capture holds only a hash of this object ({why})", None
            want = int(str(hashed), 16)
            if got == want:
                return "equal", "hash matches", None
            return "different", f"hash {got:x} != captured {want:x}", None
        return "unchecked", c.get("note", "no captured data to compare with"), None
