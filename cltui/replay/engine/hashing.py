"""The layer's 64-bit hash of an object on the device (for hash-only dumps), else on the host.
The :class:`DeviceHash` part of :class:`.core.Engine`."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import numpy as np

from .base import EngineOptions, HostArray, Shared, _cl_msg, build_program
from .builds import drop_saved_source

if TYPE_CHECKING:
    import pyopencl as cl

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


class DeviceHash:
    """Hashing what a step wrote like the layer does (see the module doc): the kernel, built
    on first use, or why the device could not hash (then the host ``hasher``)."""

    def __init__(self, opts: EngineOptions, shared: Shared) -> None:
        self.device = opts.device
        self.hasher = opts.hasher
        self.progress = opts.progress
        self.ctx, self.queue = shared.ctx, shared.queue
        self._hash_kernel: cl.Kernel | None = None  # built on the first hash-only check
        self._hash_error = ""  # why the device could not hash (then the host hasher)

    def hash64(self, host: HostArray, enqueue: int | None = None) -> tuple[int | None, str]:
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
                return self.device_hash64(host, enqueue), "device"
            except Exception as exc:  # a device that cannot build or run the kernel
                self._hash_error = _cl_msg(exc) if hasattr(exc, "code") else str(exc)
            if self.hasher is not None:
                return self.hasher(host.tobytes()), "host"
        return None, f"it could not be hashed on {self.device.get('name')}: {self._hash_error}"

    def device_hash64(self, host: HostArray, enqueue: int | None = None) -> int:
        import pyopencl as cl

        if self._hash_kernel is None:
            with warnings.catch_warnings():  # compiler chatter is not a replay problem
                warnings.simplefilter("ignore")
                try:
                    prg = build_program(cl.Program(self.ctx, HASH64_SOURCE))
                except cl.Error as exc:
                    drop_saved_source(str(exc))
                    raise
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
