"""Checks: comparing what a step wrote with the capture (element-wise, or by the layer's hash
on the device), and verifying a load.  A mixin of :class:`engine.Engine`; copied beside
``engine.py`` in a bundle."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import numpy.typing as npt

if __package__:
    from . import compare as _compare
    from .engine_base import (
        EngineError,
        _cl_msg,
        _Mem,
        _safe,
    )
    from .engine_memory import (
        _Memory,
    )
else:  # pragma: no cover - the exported bundle runs this file as a script
    import compare as _compare  # type: ignore[no-redef, import-not-found]
    from engine_base import (  # type: ignore[no-redef, import-not-found]
        EngineError,
        _cl_msg,
        _Mem,
        _safe,
    )
    from engine_memory import (  # type: ignore[no-redef, import-not-found]
        _Memory,
    )

# The layer's hash (capture-format §5.2: Bob Jenkins' 96-bit mix over little-endian 32-bit
# words), one work-item walking the chain; ``cltui.capture.hashing.cli_hash64`` is the same
# in Python (the tests hold the two to each other).
HASH64_SEED = (0x428A2F98, 0x71374491, 0xB5C0FBCF)

HASH64_CHUNK_WORDS = 1 << 22

HASH64_SOURCE = """
__kernel void cltui_hash64(__global const uint* w, const ulong base, const uint n,
                           __global uint* state) {
    uint a = state[0], b = state[1], c = state[2];
    for (uint i = 0; i < n; i++) {
        a ^= w[base + i];
        a -= b; a -= c; a ^= c >> 13;
        b -= c; b -= a; b ^= a << 8;
        c -= a; c -= b; c ^= b >> 13;
        a -= b; a -= c; a ^= c >> 12;
        b -= c; b -= a; b ^= a << 16;
        c -= a; c -= b; c ^= b >> 5;
        a -= b; a -= c; a ^= c >> 3;
        b -= c; b -= a; b ^= a << 10;
        c -= a; c -= b; c ^= b >> 15;
    }
    state[0] = a; state[1] = b; state[2] = c;
}
"""


class _Checks(_Memory):
    """Checks: comparing what a step wrote with the capture (element-wise, or by the layer's hash"""

    def _verify(
        self,
        step: dict[str, Any],
        m: _Mem,
        host: npt.NDArray[np.uint8],
        prereads: list[tuple[_Mem, npt.NDArray[np.uint8]]],
    ) -> bool:
        """A ``verify`` load: reload only if the replayed state differs from the captured Pre."""
        import pyopencl as cl

        mine = next((buf for pm, buf in prereads if pm is m), None)
        if mine is None:  # no pre-check of this object: read it now
            mine = np.empty(m.size, np.uint8)
            self._read(m, mine)
        try:
            self.queue.finish()
        except cl.Error as exc:
            raise EngineError(
                f"enqueue {step['enqueue']}: reading the state before it failed: {_cl_msg(exc)}",
                step["enqueue"],
            ) from None
        if _compare.bytes_equal(mine, host):
            return False
        self._write(m, host)
        return True

    def _check(
        self, step: dict[str, Any], c: dict[str, Any], host: npt.NDArray[np.uint8], when: str
    ) -> dict[str, Any]:
        out: dict[str, Any] = {
            "mem": c["mem"],
            "args": c.get("args", []),
            "label": c.get("label", c["mem"]),
            "dtype": c.get("dtype"),
            "shape": c.get("shape"),
            "output": None,
        }
        if self.save_dir is not None and when == "post":
            self.save_dir.mkdir(parents=True, exist_ok=True)
            path = self.save_dir / f"{step['enqueue']}_{_safe(c['mem'])}.bin"
            if self._writer is None:
                from concurrent.futures import ThreadPoolExecutor

                self._writer = ThreadPoolExecutor(1, thread_name_prefix="cltui-save")
            # written while the next checks compare (creating a file costs ~1 ms here)
            self._writes.append(self._writer.submit(host.tofile, path))
            out["output"] = str(path)
        tol = self.tol.merged(c.get("tol"))
        for a in c.get("args", []):
            tol = tol.merged(self.arg_tol.get(int(a)))
        out["tolerance"] = tol.to_dict()
        out["data"] = c.get("data")
        if c.get("data"):
            res = _compare.compare_bytes(
                self.loader(c["data"]), host, c.get("dtype"), tol, c.get("shape")
            )
            out["status"] = res.status
            out["result"] = res.to_dict()
            out["summary"] = res.summary()
        elif c.get("hash64"):
            got, why = self._hash64(host, step["enqueue"])
            if got is None:
                out["status"] = "unchecked"
                out["summary"] = f"the capture holds only a hash of this object ({why})"
            else:
                want = int(str(c["hash64"]), 16)
                out["status"] = "equal" if got == want else "different"
                out["summary"] = (
                    "hash matches" if got == want else f"hash {got:x} != captured {want:x}"
                )
        else:
            out["status"] = "unchecked"
            out["summary"] = c.get("note", "no captured data to compare with")
        if c.get("after_unreplayed") is not None:
            at = int(c["after_unreplayed"])
            out["after_unreplayed"] = at
            out["summary"] = f"after unreplayed host write at {at}: {out['summary']}"
        return out

    def _hash64(
        self, host: npt.NDArray[np.uint8], enqueue: int | None = None
    ) -> tuple[int | None, str]:
        """The layer's 64-bit hash of ``host`` (to compare with a hash-only dump), and how.

        The hash is one sequential chain over 32-bit words: in Python it runs at ~4 MB/s,
        so it runs as a one-work-item kernel on this engine's device (PoCL: ~0.5 GB/s)
        unless the device is a simulator (Oclgrind interprets every operation) and a host
        ``hasher`` was given.  Without either: (None, why)."""
        simulator = "oclgrind" in str(self.device.get("platform", "")).lower()
        if self.hasher is not None and (simulator or self._hash_error):
            return self.hasher(host.tobytes()), "host"
        if not self._hash_error:
            try:
                return self._device_hash64(host, enqueue), "device"
            except Exception as exc:  # a device that cannot build or run the kernel
                self._hash_error = _cl_msg(exc) if hasattr(exc, "code") else str(exc)
            if self.hasher is not None:
                return self.hasher(host.tobytes()), "host"
        return None, f"it could not be hashed on {self.device.get('name')}: {self._hash_error}"

    def _device_hash64(self, host: npt.NDArray[np.uint8], enqueue: int | None = None) -> int:
        import pyopencl as cl

        if self._hash_kernel is None:
            with warnings.catch_warnings():  # compiler chatter is not a replay problem
                warnings.simplefilter("ignore")
                prg = cl.Program(self.ctx, HASH64_SOURCE).build()
            self._hash_kernel = cl.Kernel(prg, "cltui_hash64")
        words = (host.size + 3) // 4
        state = np.array(HASH64_SEED, dtype=np.uint32)
        if words:
            padded = np.ascontiguousarray(host)
            if host.size % 4:  # the last 1-3 bytes hash as one zero-padded word
                padded = np.zeros(words * 4, dtype=np.uint8)
                padded[: host.size] = host
            mf = cl.mem_flags
            data = cl.Buffer(self.ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=padded)
            st = cl.Buffer(self.ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=state)
            k = self._hash_kernel
            k.set_arg(0, data)
            k.set_arg(3, st)
            # a launch per chunk: no single launch runs long enough to trip a GPU watchdog,
            # and a progress event after each (one GPU thread hashes ~50 MB/s: the runner
            # must not take a large object for a hang)
            for base in range(0, words, HASH64_CHUNK_WORDS):
                n = min(HASH64_CHUNK_WORDS, words - base)
                k.set_arg(1, np.uint64(base))
                k.set_arg(2, np.uint32(n))
                cl.enqueue_nd_range_kernel(self.queue, k, (1,), (1,)).wait()
                self.progress(
                    {"type": "hash", "enqueue": enqueue, "done": 4 * (base + n), "of": 4 * words}
                )
            cl.enqueue_copy(self.queue, state, st)
            self.queue.finish()
        return (int(state[1]) << 32) | int(state[2])
