"""How the engine builds a program (cltui.replay.engine.base.build_program): never through
pyopencl's cache of source builds, and one build at a time in a process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cltui.cli import main
from tests.test_build_errors import _broken_capture
from tests.test_export_device import _need, cpp_replay  # noqa: F401 (fixture)

pytestmark = [pytest.mark.device, pytest.mark.child]

ROOT = Path(__file__).resolve().parent.parent

# two threads, ten builds each: Oclgrind dies of a SIGSEGV on two clBuildProgram at once
# (every time here with a plain ``prg.build``): a sweep's build-ahead thread beside its run
TWO_THREADS = """
import threading
import pyopencl as cl
from cltui.replay.engine.base import build_program
ctx = cl.Context([d for p in cl.get_platforms() if "Oclgrind" in p.name
                  for d in p.get_devices()])
src = "__kernel void k%d(__global float *a) { a[get_global_id(0)] = mad(a[0], a[1], a[2]); }"
def work(i):
    for j in range(10):
        build_program(cl.Program(ctx, src % (100 * i + j)))
threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("built")
"""


def test_two_threads_build_one_at_a_time_on_oclgrind() -> None:
    _need("oclgrind")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    res = subprocess.run([sys.executable, "-c", TWO_THREADS], env=env, capture_output=True,
                         text=True, timeout=300)  # fmt: skip
    assert res.returncode == 0 and res.stdout.strip() == "built", (res.returncode, res.stderr)


def test_pyopencl_s_own_cache_never_fails_a_replay(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine keeps its own cache of binaries and builds past pyopencl's.  pyopencl's
    cache (of source builds on Oclgrind; PoCL caches its own) failed every replay once it
    failed: a lock file left by a process killed in a build made each later build wait a
    minute and fail with ``KeyError: 'PYOPENCL_CACHE_FAILURE_FATAL'`` (explain's runs in a
    suite under load; the CI of stop 39).  Here its folder cannot be made (it fails at once
    the same way)."""
    _need("oclgrind")
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "pyopencl").write_text("a file where pyopencl wants its cache folder")
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    monkeypatch.delenv("PYOPENCL_CACHE_FAILURE_FATAL", raising=False)
    twice = "__kernel void twice(__global int *a) { int i = get_global_id(0); a[i] *= 2; }\n"
    cap = _broken_capture(tmp_path / "cap", twice)
    res = CliRunner().invoke(main, ["replay", str(cap), "0-1", "-d", "oclgrind", "--json"])
    dev = json.loads(res.stdout)["devices"][0]
    assert res.exit_code == 0 and not dev.get("error"), dev
    assert list((cache / "cltui" / "binaries").iterdir())  # the engine's own cache has it


@pytest.mark.parametrize("device", ["pocl", "oclgrind"])
def test_a_program_is_built_with_exactly_its_captured_options(device: str) -> None:
    """As the C++ runner builds it: pyopencl's ``Program.build`` added its own
    ``-I .../pyopencl/cl`` to every build (and ``-D PYOPENCL_USING_OCLGRIND`` on Oclgrind),
    options the captured application never gave."""
    _need(device)
    import pyopencl as cl

    from cltui.replay.engine.base import build_program

    key = {"pocl": "portable computing language", "oclgrind": "oclgrind"}[device]
    (plat,) = [p for p in cl.get_platforms() if key in p.name.lower()]
    ctx = cl.Context(plat.get_devices()[:1])
    src = "__kernel void k(__global int *a) { a[0] = X; }"
    prg = build_program(cl.Program(ctx, src), "-D X=3")
    options = prg.get_build_info(ctx.devices[0], cl.program_build_info.OPTIONS)
    assert options == "-D X=3"
    out = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4)
    queue = cl.CommandQueue(ctx)
    prg.k(queue, (1,), None, out)
    got = bytearray(4)
    cl.enqueue_copy(queue, got, out).wait()
    assert int.from_bytes(got, "little") == 3


def test_captured_options_reach_the_driver_as_written_in_both_runners(
    tmp_path: Path, cpp_replay: Path  # noqa: F811 (the fixture)
) -> None:
    """``-D C='a'``: the application's driver got a character literal (97).  The Python
    runner re-spelled the captured options as shell words (``-D C=a``: a name, the build
    failed) where the C++ runner passed them as captured; both pass them as captured now,
    in ``cltui replay`` and in a bundle, on PoCL and on Oclgrind."""
    import numpy as np

    from cltui.capture import open_capture
    from cltui.export import export_range
    from tests.analysis_synth import Arg, Launch, SynthCapture, write_capture
    from tests.test_export_device import run_cpp, run_py

    def sim(st: dict[str, Any], a: list[str]) -> None:
        st[a[0]][:] = 97 + 5

    src = "__kernel void put(__global int *a) { a[get_global_id(0)] = C + W; }\n"
    spec = SynthCapture(src, {"A": np.zeros(8, dtype=np.int32)},
                        [Launch("put", [Arg("buf", "A")], 8, 8, sim)],
                        options="-D C='a'  -D W=\"(2+3)\"")  # fmt: skip
    cap = write_capture(spec, tmp_path / "cap")
    for device in ("pocl", "oclgrind"):
        _need(device)
        res = CliRunner().invoke(main, ["replay", str(cap), "0", "-d", device, "--json"])
        report = json.loads(res.stdout)
        assert res.exit_code == 0, report["devices"][0].get("error")
        assert report["verdict"]["status"] == "pass", report["verdict"]
    bundle = tmp_path / "bundle"
    export_range(open_capture(cap), "0", bundle)
    for proc in (run_py(bundle, "--json", "--device", "pocl"),
                 run_cpp(cpp_replay, bundle, "--json", "--device", "pocl")):  # fmt: skip
        (res,) = json.loads(proc.stdout)
        assert proc.returncode == 0 and res["error"] is None, (proc.stderr, res["error"])
