"""Exported bundles run on the real devices, away from cltui.

Each bundle is exported, copied to a fresh folder, and run there as a separate process:
``python replay.py`` (the venv's python, outside the repository) and the C++ program built
once per session with CMake from a bundle's own CMakeLists.txt.  Both must pass on the
capturing platform and give the same verdict for every check.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cltui.capture import open_capture
from cltui.capture.names import sanitize_component
from cltui.export import export_range
from tests.conftest import (
    LIKE_HERE,
    binaries_made_here,
    copy_capture,
    made_on,
    named_like_here,
    pocl_here,
)
from tests.schemas import validate

pytestmark = [pytest.mark.device, pytest.mark.child]

PY = sys.executable  # the venv's python: numpy + pyopencl


def _platforms() -> set[str]:
    try:
        import pyopencl as cl

        return {p.name.strip().lower() for p in cl.get_platforms()}
    except Exception:
        return set()


def _need(device: str) -> None:
    names = " ".join(_platforms())
    key = {"pocl": "portable computing language", "oclgrind": "oclgrind"}[device]
    if key not in names:
        pytest.skip(f"no {device} platform")


def _env() -> dict[str, str]:
    """No PYTHONPATH: the bundle must not import cltui.  One PoCL thread: heat2d's
    heat_boundary has a write-write race (two work-groups write its corner elements, see
    tests/test_replay_devices.py and ``cltui explain``), so with PoCL's threads the value kept
    depends on their order, which a loaded machine changes (seen: one runner -5 where the
    capture has 0); one thread runs the work-groups in order, as the capture kept them."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["POCL_MAX_PTHREAD_COUNT"] = "1"
    return env


class Bundles:
    """Exports (capture, range, mode) once per session into a fresh copied folder."""

    def __init__(self, root: Path, captures: dict[str, Path]) -> None:
        self.root = root
        self.captures = captures
        self.cache: dict[tuple[str, str, str], Path] = {}
        self.opened: dict[str, Any] = {}

    def get(self, capture: str, rng: str, mode: str = "chain") -> Path:
        key = (capture, rng, mode)
        if key not in self.cache:
            n = len(self.cache)
            first = self.root / f"export{n}" / "bundle"
            if capture not in self.opened:
                self.opened[capture] = open_capture(self.captures[capture])
            export_range(self.opened[capture], rng, first, mode=mode)
            fresh = self.root / f"fresh{n}" / "bundle"
            shutil.copytree(first, fresh)
            shutil.rmtree(first.parent)
            self.cache[key] = fresh
        return self.cache[key]


@pytest.fixture(scope="session")
def bundles(
    tmp_path_factory: pytest.TempPathFactory,
    images_svm: Path,
    pyocl_pocl: Path,
    pyocl_oclgrind: Path,
    opencv: Path,
    heat2d: Path,
) -> Bundles:
    caps = {
        "images_svm": images_svm,
        "pyocl_pocl": pyocl_pocl,
        "pyocl_oclgrind": pyocl_oclgrind,
        "opencv": opencv,
        "heat2d": heat2d,
    }
    return Bundles(tmp_path_factory.mktemp("bundles"), caps)


@pytest.fixture(scope="session")
def cpp_replay() -> Path:
    """The C++ replay, built once per test run by the one recipe ``cltui latency`` uses
    (:func:`cltui.latency.native.build_runner`: the runner's files, a bundle's byte for byte,
    CMake, Release) into the run's cache (tests/conftest.py), where the xdist workers and the
    latency tests find it (under a lock): one build a run, not one per user."""
    from cltui.latency.native import NativeError, build_runner

    if shutil.which("cmake") is None or shutil.which("c++") is None:
        pytest.skip("cmake or a C++ compiler is not installed")
    try:
        exe = build_runner()
    except NativeError as exc:
        pytest.fail(str(exc))
    assert exe.is_file()
    return exe


def seal_bundle(b: Path, manifest: dict[str, Any]) -> None:
    """Write a hand-made bundle's ``manifest.json`` with each data file's real size and
    sha256, and its ``SHA256SUMS``: what the runners verify before they run."""
    lines = []
    for ref in manifest["data"].values():
        raw = (b / ref["path"]).read_bytes()
        ref["size"] = len(raw)
        ref["sha256"] = hashlib.sha256(raw).hexdigest()
        lines.append(f"{ref['sha256']}  {ref['path']}\n")
    (b / "manifest.json").write_text(json.dumps(manifest))
    (b / "SHA256SUMS").write_text("".join(sorted(set(lines))))


def run_py(bundle: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PY, "replay.py", *args],
        cwd=bundle,
        capture_output=True,
        text=True,
        env=_env(),
        timeout=300,
    )


def run_cpp(exe: Path, bundle: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(exe), *args], cwd=bundle, capture_output=True, text=True, env=_env(), timeout=300
    )


def verdicts(results: list[dict[str, Any]]) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    """(enqueue, when, mem, args) -> (status, n_diff, n_bad, max_ulp) of one device's run."""
    (res,) = results
    assert res["error"] is None, res["error"]
    out: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    for st in res["steps"]:
        for when in ("prechecks", "checks"):
            for c in st[when]:
                r = c.get("result") or {}
                ulp = r.get("max_ulp")
                out[(st["enqueue"], when, c["mem"], tuple(c["args"]))] = (
                    c["status"],
                    r.get("n_diff"),
                    r.get("n_bad"),
                    None if ulp is None else float(ulp),
                )
    return out


def what_failed(run: subprocess.CompletedProcess[str]) -> str:
    """A failed ``--json`` run in a few lines: its exit code, verdict, error, and every check
    that is not equal (the whole JSON's tail can cut the failing step off)."""
    lines = [f"exit {run.returncode}; stderr: {run.stderr[-2000:]}"]
    try:
        results = json.loads(run.stdout)
    except ValueError:
        return "\n".join([*lines, run.stdout[-4000:]])
    for res in results:
        lines.append(f"{res['device'].get('name')}: {res.get('verdict')} error={res['error']}")
        lines += [f"  {st['enqueue']} {when} {c['mem']} {c['args']}: {c['status']} "
                  f"{c.get('result')}"
                  for st in res["steps"] for when in ("prechecks", "checks")
                  for c in st[when] if c["status"] != "equal"]
    return "\n".join(lines)


def both(bundle: Path, exe: Path, device: str, *extra: str) -> tuple[Any, Any]:
    py = run_py(bundle, "--validate", "--json", "--device", device, *extra)
    cpp = run_cpp(exe, bundle, "--validate", "--json", "--device", device, *extra)
    assert py.returncode == 0, what_failed(py)
    assert cpp.returncode == 0, what_failed(cpp)
    return json.loads(py.stdout), json.loads(cpp.stdout)


CASES = [
    # capture, range, mode, what it covers
    ("pyocl_pocl", "0-5", "chain"),  # rng: pyopencl's random123 headers from its package here
    ("pyocl_pocl", "14", "chain"),  # a single kernel; a 16-byte struct by value
    ("pyocl_pocl", "18", "chain"),  # two __local arguments
    ("pyocl_pocl", "22-34", "chain"),  # a chained window of 13 dependent kernels
    ("pyocl_pocl", "18-21", "isolated"),  # isolated mode, four programs all named 'run'
    ("images_svm", "0-8", "chain"),  # images of several sizes, sampler, 3D image, SVM+offset
    ("heat2d", "122396-122411", "chain"),  # chain across the host write at 122407
    ("opencv", "41-64", "chain"),  # FFT/matchTemplate chain, aliased args, long -D options
]


@pytest.mark.parametrize(("capture", "rng", "mode"), CASES)
def test_python_and_cpp_pass_on_pocl_and_agree(
    bundles: Bundles, cpp_replay: Path, capture: str, rng: str, mode: str
) -> None:
    _need("pocl")
    bundle = bundles.get(capture, rng, mode)
    py, cpp = both(bundle, cpp_replay, "pocl")
    assert py[0]["ok"] and cpp[0]["ok"]
    vp, vc = verdicts(py), verdicts(cpp)
    assert vp == vc
    checks = [k for k in vp if k[1] == "checks"]
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert len(checks) == sum(len(s["checks"]) for s in manifest["steps"]) > 0
    # captured on PoCL: every check is bit-exact
    assert {vp[k][0] for k in checks} == {"equal"}
    assert [s["enqueue"] for s in py[0]["steps"]] == [s["enqueue"] for s in manifest["steps"]]


def test_both_runners_build_the_same_programs_on_pocl(
    bundles: Bundles, cpp_replay: Path, tmp_path: Path
) -> None:
    """PoCL keys its cache of builds on the source and the options: after the Python runner,
    the C++ runner of the same bundle compiles nothing new.  Before, pyopencl added its own
    ``-I`` to every Python build, and each kernel was compiled once per runner."""
    _need("pocl")
    cache = tmp_path / "pocl-cache"

    def built() -> list[str]:
        return sorted(p.name for p in cache.rglob("*.so"))

    env = {**_env(), "POCL_CACHE_DIR": str(cache)}
    for rng in ("22-34", "0-5"):  # 0-5: random123's headers, from the bundle's own folder
        bundle = bundles.get("pyocl_pocl", rng)
        py = subprocess.run([PY, "replay.py", "--device", "pocl"], cwd=bundle, env=env,
                            capture_output=True, text=True, timeout=300)  # fmt: skip
        assert py.returncode == 0, py.stdout + py.stderr
        after_python = built()
        assert after_python
        cpp = subprocess.run([str(cpp_replay), "--device", "pocl"], cwd=bundle, env=env,
                             capture_output=True, text=True, timeout=300)  # fmt: skip
        assert cpp.returncode == 0, cpp.stdout + cpp.stderr
        assert built() == after_python, rng


@pytest.mark.parametrize("device", ["pocl", "oclgrind"])
def test_a_bundle_in_a_folder_with_a_space_builds_its_includes(
    bundles: Bundles, cpp_replay: Path, tmp_path: Path, device: str
) -> None:
    """Run from its folder, as its README says, a bundle under ``My Bundles`` builds the
    programs that include its bundled headers in both runners: PoCL reads no header from an
    ``-I`` folder with a space in its name (quoted or not), and Oclgrind crashed on the bare
    one the Python runner gave (SIGSEGV); the folders are named relative to the current
    folder.  From the C++ runner's build folder too (``cd build && ./replay --bundle ..``)."""
    _need(device)
    bundle = tmp_path / "My Bundles" / "rng bundle"
    shutil.copytree(bundles.get("pyocl_pocl", "0-5"), bundle)
    build = bundle / "build"
    build.mkdir()
    py = run_py(bundle, "--device", device)
    cpp = run_cpp(cpp_replay, bundle, "--device", device)
    up = subprocess.run([str(cpp_replay), "--bundle", "..", "--device", device], cwd=build,
                        capture_output=True, text=True, env=_env(), timeout=300)  # fmt: skip
    for run in (py, cpp, up):
        assert run.returncode == 0, run.stdout + run.stderr
        assert "PASS: 5/5 kernel enqueues replayed" in run.stdout, run.stdout


def test_a_bundle_with_a_space_runs_from_a_current_folder_that_is_gone(
    bundles: Bundles, cpp_replay: Path, tmp_path: Path
) -> None:
    """Both runners name an include folder relative to the current folder only where they
    can read it: started in a folder that was removed, they name it by its path (quoted),
    which Oclgrind reads, instead of failing on the missing folder."""
    _need("oclgrind")
    bundle = tmp_path / "My Bundles" / "rng bundle"
    shutil.copytree(bundles.get("pyocl_pocl", "0-5"), bundle)
    gone = tmp_path / "gone"
    for argv in ([PY, str(bundle / "replay.py")], [str(cpp_replay), "--bundle", str(bundle)]):
        gone.mkdir()
        script = 'cd "$1" && rmdir "$1" && shift && exec "$@"'
        run = subprocess.run(["sh", "-c", script, "sh", str(gone), *argv, "--device", "oclgrind"],
                             capture_output=True, text=True, env=_env(), timeout=300)  # fmt: skip
        assert run.returncode == 0, run.stdout + run.stderr
        assert "PASS: 5/5 kernel enqueues replayed" in run.stdout, run.stdout + run.stderr


def test_heat2d_host_write_is_reloaded_and_reported(bundles: Bundles, cpp_replay: Path) -> None:
    _need("pocl")
    bundle = bundles.get("heat2d", "122396-122411")
    py = run_py(bundle, "--device", "pocl")
    cpp = run_cpp(cpp_replay, bundle, "--device", "pocl")
    for out in (py.stdout, cpp.stdout):
        assert "reload" in out and "122407 WriteBuffer" in out
        assert "before: arg 2 (buffer 0000): different" in out
        assert out.rstrip().endswith(
            "PASS: 13/13 kernel enqueues replayed, 21/21 outputs checked (21 equal), "
            "1/1 host transfers replayed"
        )


def test_verify_loads_where_the_capture_has_no_post_dump(
    bundles: Bundles, cpp_replay: Path
) -> None:
    """heat2d 122376-122384: the dumps start at 122380, so the state the first four kernels
    leave is unknown to the capture: 122380 verifies it against its Pre dumps and reloads."""
    _need("pocl")
    bundle = bundles.get("heat2d", "122376-122384")
    m = json.loads((bundle / "manifest.json").read_text())
    verify = [
        (s["enqueue"], ld["mem"]) for s in m["steps"] for ld in s["loads"] if ld["why"] == "verify"
    ]
    assert [e for e, _ in verify] == [122380, 122380]
    # the outputs of the first four kernels were not dumped: unchecked, so INCOMPLETE (exit 3)
    runs = [
        run_py(bundle, "--validate", "--json", "--device", "pocl"),
        run_cpp(cpp_replay, bundle, "--validate", "--json", "--device", "pocl"),
    ]
    assert [p.returncode for p in runs] == [3, 3], runs[0].stderr + runs[1].stderr
    py, cpp = (json.loads(p.stdout) for p in runs)
    assert py[0]["verdict"] == cpp[0]["verdict"]
    assert py[0]["verdict"]["status"] == "incomplete"
    assert py[0]["verdict"]["counts"]["different"] == 0
    assert verdicts(py) == verdicts(cpp)

    def loads(res: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        return [
            (s["enqueue"], ld["mem"], ld["why"], ld["done"])
            for s in res[0]["steps"]
            for ld in s["loads"]
        ]

    assert loads(py) == loads(cpp)
    assert all(done for *_x, done in loads(py))  # zero-filled state differs: both reloaded


def test_bundle_runs_after_its_capture_is_gone(
    images_svm: Path, tmp_path: Path, cpp_replay: Path
) -> None:
    _need("pocl")
    cap = copy_capture(images_svm, tmp_path / "cap")
    bundle = tmp_path / "b"
    export_range(open_capture(cap), "0-3", bundle, langs="python,cpp")
    shutil.rmtree(cap)
    py = run_py(bundle, "--validate", "--device", "pocl")
    assert py.returncode == 0, py.stdout + py.stderr
    cpp = run_cpp(cpp_replay, bundle, "--validate", "--device", "pocl", "--bundle", str(bundle))
    assert cpp.returncode == 0, cpp.stdout + cpp.stderr


# --------------------------------------------------------------------------- Oclgrind


@pytest.mark.parametrize("rng", ["14", "16-18"])
def test_oclgrind_capture_passes_on_oclgrind(bundles: Bundles, cpp_replay: Path, rng: str) -> None:
    """The Oclgrind twin replays bit-exact on Oclgrind, its capturing platform."""
    _need("oclgrind")
    bundle = bundles.get("pyocl_oclgrind", rng)
    py, cpp = both(bundle, cpp_replay, "oclgrind")
    assert py[0]["device"]["name"] == cpp[0]["device"]["name"] == "Oclgrind Simulator"
    vp = verdicts(py)
    assert vp == verdicts(cpp)
    assert {v[0] for k, v in vp.items() if k[1] == "checks"} == {"equal"}


def test_pocl_capture_on_oclgrind_reports_ulp_and_emulated_svm(
    bundles: Bundles, cpp_replay: Path
) -> None:
    """Oclgrind 21.10 is OpenCL 1.2: SVM is emulated with a buffer, and said so.  Its linear
    sampler rounds differently from PoCL: a mismatch with ULP figures, within --ulp 4."""
    _need("oclgrind")
    bundle = bundles.get("images_svm", "0-8")
    strict_py = run_py(bundle, "--validate", "--json", "--device", "oclgrind")
    strict_cpp = run_cpp(cpp_replay, bundle, "--validate", "--json", "--device", "oclgrind")
    assert strict_py.returncode == 1 and strict_cpp.returncode == 1
    py, cpp = json.loads(strict_py.stdout), json.loads(strict_cpp.stdout)
    for res in (py, cpp):
        assert any("has no SVM: emulated with a buffer" in n for n in res[0]["notes"])
    vp, vc = verdicts(py), verdicts(cpp)
    assert vp == vc
    bad = {k: v for k, v in vp.items() if v[0] == "different"}
    assert [k[0] for k in bad] == [2]  # sample_linear only
    ((_status, n_diff, n_bad, max_ulp),) = bad.values()
    assert n_diff == n_bad > 0 and max_ulp is not None and 0 < max_ulp <= 4
    # without --validate the exit code stays 0; with a ULP tolerance the range passes
    assert run_py(bundle, "--device", "oclgrind").returncode == 0
    py2, cpp2 = both(bundle, cpp_replay, "oclgrind", "--ulp", "4")
    v2 = verdicts(py2)
    assert v2 == verdicts(cpp2)
    assert {v[0] for v in v2.values()} == {"equal", "within"}


# --------------------------------------------------------------------------- options


def test_repeat_out_and_list_devices(bundles: Bundles, cpp_replay: Path, tmp_path: Path) -> None:
    from cltui.replay import engine

    _need("pocl")
    bundle = bundles.get("pyocl_pocl", "22-34")
    outs = {}
    for name, runner in (
        ("py", lambda *a: run_py(bundle, *a)),
        ("cpp", lambda *a: run_cpp(cpp_replay, bundle, *a)),
    ):
        out = tmp_path / name
        out.mkdir()
        proc = runner("--device", "pocl", "--repeat", "3", "--json", "--out", str(out))
        assert proc.returncode == 0, proc.stderr
        (res,) = json.loads(proc.stdout)
        assert res["repeat"] == 3
        for st in res["steps"]:
            t = st["timing"]
            assert t["samples"] == 3
            for stage in ("queued_to_submit", "submit_to_start", "start_to_end", "host_enqueue"):
                assert t[stage]["min"] <= t[stage]["median"] <= t[stage]["max"]
        outs[name] = {p.name: p.read_bytes() for p in out.iterdir()}
        traced = runner("--device", "pocl", "--trace", "--stream", "--json")
        assert traced.returncode == 0
        steps = json.loads((bundle / "manifest.json").read_text())["steps"]
        assert [ln for ln in traced.stderr.splitlines() if ln.startswith("replay: enqueue")] == [
            f"replay: enqueue {s['enqueue']} ({i + 1}/{len(steps)})" for i, s in enumerate(steps)
        ]
        # --stream: each finished step as one JSON line, as the final result holds it
        streamed = [json.loads(ln[len("replay: step "):]) for ln in traced.stderr.splitlines()
                    if ln.startswith("replay: step ")]
        (whole,) = json.loads(traced.stdout)

        def brief(sts: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
            return [(st["enqueue"], st["status"], [(c["mem"], c["status"]) for c in st["checks"]])
                    for st in sts]

        assert brief(streamed) == brief(whole["steps"]) and len(streamed) == len(steps)
        lst = runner("--list-devices")
        assert lst.returncode == 0
        assert "Oclgrind Simulator" in lst.stdout and "pthread" in lst.stdout
        # each line ends with the driver version (CL_DRIVER_VERSION), and so does the JSON
        drivers = {d["id"]: d["driver"] for d in engine.list_devices()}
        listed = dict(ln.split("  ", 1) for ln in lst.stdout.splitlines())
        assert {k: v.rsplit("  driver ", 1)[1] for k, v in listed.items()} == drivers
        assert res["device"]["driver"] == drivers[res["device"]["id"]]
        bad = runner("--device", "no-such-device")
        assert bad.returncode == 2 and "no-such-device" in bad.stderr
        assert "Traceback" not in bad.stderr
    # both wrote the same replayed outputs, and they are the captured Post contents
    assert outs["py"] == outs["cpp"] and len(outs["py"]) > 0
    m = json.loads((bundle / "manifest.json").read_text())
    expected = {
        f"{s['enqueue']}_{''.join(ch if ch.isalnum() or ch in '-_.' else '_' for ch in c['mem'])}"
        ".bin": (bundle / m["data"][c["data"]]["path"]).read_bytes()
        for s in m["steps"]
        for c in s["checks"]
    }
    assert outs["py"] == expected


def test_replay_py_imports_cltui_only_from_the_bundle(bundles: Bundles) -> None:
    """The bundle's replay.py runs its own copy of the engine (``lib/``) even where a cltui is
    installed (this venv has one, through a .pth file): every cltui module it loads is a
    file of the bundle."""
    bundle = bundles.get("pyocl_pocl", "14")
    code = (
        "import pathlib, runpy, sys; sys.argv=['replay.py', '--list-devices'];"
        "\ntry: runpy.run_path('replay.py', run_name='__main__')"
        "\nexcept SystemExit: pass"
        "\nlib = pathlib.Path('lib').resolve()"
        "\nmods = {m: v for m, v in sys.modules.items() if m.split('.')[0] == 'cltui'}"
        "\nassert 'cltui.replay.engine.devices' in mods, sorted(mods)"  # what listing loads
        "\nout = [m for m, v in mods.items()"
        "\n       if not pathlib.Path(v.__file__ or '/').resolve().is_relative_to(lib)]"
        "\nassert not out, out"
    )
    proc = subprocess.run(
        [PY, "-c", code], cwd=bundle, capture_output=True, text=True, env=_env(), timeout=120
    )
    assert proc.returncode == 0, proc.stderr


# --------------------------------------------------------------------------- the two runners


def _edge_case_bundle(root: Path) -> Path:
    """A hand-written bundle: a kernel that changes nothing, so each object's replayed contents
    are its input, checked against expected data made to differ in chosen ways."""
    import numpy as np

    from cltui.export.exporter import _runner_file, engine_modules

    b = root / "edge"
    (b / "data").mkdir(parents=True)
    one = np.float32(1.0)
    f32_in = np.array([1.0, np.nan, np.inf, -0.0, 2.0, 3.0], np.float32)
    f32_exp = f32_in.copy()
    f32_exp[0] = np.nextafter(one, np.float32(2))
    f32_exp.view(np.uint32)[1] = 0x7FC00001  # another NaN payload: NaN matches NaN
    f32_exp[3] = 0.0  # -0.0 vs 0.0: bits differ, values equal
    f32_exp.view(np.uint32)[4] += 3  # 3 ULP
    st = np.dtype({"names": ["a", "b"], "formats": ["<f4", "<i4"], "offsets": [0, 4]})
    s_in = np.array([(1.0, 5), (2.0, 6)], st)
    s_exp = s_in.copy()
    s_exp["a"][0] = np.nextafter(one, np.float32(2))
    s_exp["b"][1] = 7
    h_in = np.array([1.0, 2.0], np.float16)
    h_exp = h_in.copy()
    h_exp.view(np.uint16)[0] += 1
    d_in = np.array([1.0], np.float64)
    d_exp = d_in + 1e-9
    v_in = np.arange(8, dtype=np.float32)
    v_exp = v_in.copy()
    v_exp.view(np.uint32)[6] += 2  # element 1, lane 2
    raw = np.arange(8, dtype=np.uint8)
    objects = [  # (input, expected, dtype spec, per-check tolerance)
        (f32_in, f32_exp, "<f4", None),
        (s_in, s_exp, [["a", "<f4", 0], ["b", "<i4", 4]], None),
        (h_in, h_exp, "<f2", None),
        (d_in, d_exp, "<f8", {"atol": 1e-6}),
        (raw, np.arange(10, dtype=np.uint8), "|u1", None),  # expected is longer
        (v_in, v_exp, "(4,)<f4", None),
        (raw, raw, None, None),
    ]
    data: dict[str, Any] = {}
    memory: dict[str, Any] = {}
    args, loads, checks = [], [], []
    for i, (inp, exp, spec, tol) in enumerate(objects):
        for kind, arr in (("in", inp), ("exp", exp)):
            key = f"{kind}{i}"
            (b / "data" / f"{key}.bin").write_bytes(arr.tobytes())
            data[key] = {"path": f"data/{key}.bin", "size": arr.nbytes}
        memory[f"m{i}"] = {"kind": "buffer", "label": f"buffer {i}", "size": inp.nbytes}
        args.append({"index": i, "kind": "buffer", "mem": f"m{i}"})
        loads.append({"mem": f"m{i}", "data": f"in{i}", "why": "input", "note": ""})
        check: dict[str, Any] = {
            "mem": f"m{i}",
            "args": [i],
            "label": f"arg {i}",
            "data": f"exp{i}",
            "dtype": spec,
            "shape": None,
        }
        if tol:
            check["tol"] = tol
        checks.append(check)
    params = ", ".join(f"__global uchar* a{i}" for i in range(len(objects)))
    (b / "kernels").mkdir()
    (b / "kernels/noop.cl").write_text(f"__kernel void noop({params}) {{}}\n")
    data["src"] = {"path": "kernels/noop.cl", "size": 0}
    manifest = {
        "format": "cltui-replay-plan",
        "version": 1,
        "tolerance": {"atol": 0.0, "rtol": 0.0, "ulp": 1},
        "data": data,
        "programs": {"p": {"label": "noop", "source": "src", "options": "", "binaries": []}},
        "memory": memory,
        "steps": [
            {
                "enqueue": 0,
                "kernel": "noop",
                "program": "p",
                "global": [1],
                "local": None,
                "offset": None,
                "args": args,
                "loads": loads,
                "prechecks": [],
                "checks": checks,
            }
        ],
    }
    seal_bundle(b, manifest)
    for name, data in engine_modules().items():
        (b / name).parent.mkdir(parents=True, exist_ok=True)
        (b / name).write_bytes(data)
    (b / "replay.py").write_bytes(_runner_file("python", "replay.py"))
    return b


def test_cpp_and_python_judge_edge_cases_alike(cpp_replay: Path, tmp_path: Path) -> None:
    """NaN payloads, -0.0, ULP, half and double floats, structs, vectors, a size mismatch."""
    _need("pocl")
    bundle = _edge_case_bundle(tmp_path)
    for extra in ([], ["--ulp", "4"], ["--atol", "10"]):
        py = run_py(bundle, "--json", "--device", "pocl", *extra)
        cpp = run_cpp(cpp_replay, bundle, "--json", "--device", "pocl", *extra)
        assert py.returncode == 0 and cpp.returncode == 0, py.stderr + cpp.stderr
        vp, vc = verdicts(json.loads(py.stdout)), verdicts(json.loads(cpp.stdout))
        assert vp == vc, extra
        got = {k[3][0]: v[:3] for k, v in vp.items()}
        if not extra:
            assert got == {
                0: ("different", 3, 1),
                1: ("different", 2, 1),
                2: ("within", 1, 0),
                3: ("within", 1, 0),
                4: ("different", 0, 0),
                5: ("different", 1, 1),
                6: ("equal", 0, 0),
            }
        elif extra[0] == "--ulp":
            assert [got[i][0] for i in range(7)] == [
                "within",
                "different",
                "within",
                "within",
                "different",
                "within",
                "equal",
            ]
        else:
            assert [got[i][0] for i in range(7)] == [
                "within",
                "different",
                "within",
                "within",
                "different",
                "within",
                "equal",
            ]


def test_several_devices_in_one_run(bundles: Bundles, cpp_replay: Path, tmp_path: Path) -> None:
    _need("pocl")
    _need("oclgrind")
    bundle = bundles.get("pyocl_oclgrind", "14")
    runs = {}
    for name, proc in (
        (
            "py",
            run_py(
                bundle,
                "--json",
                "--validate",
                "--device",
                "pocl",
                "--device",
                "oclgrind",
                "--out",
                str(tmp_path / "py"),
            ),
        ),
        (
            "cpp",
            run_cpp(
                cpp_replay,
                bundle,
                "--json",
                "--validate",
                "--device",
                "pocl",
                "--device",
                "oclgrind",
                "--out",
                str(tmp_path / "cpp"),
            ),
        ),
    ):
        assert proc.returncode == 0, proc.stderr
        runs[name] = json.loads(proc.stdout)
    for res_py, res_cpp in zip(runs["py"], runs["cpp"], strict=True):
        assert res_py["device"]["id"] == res_cpp["device"]["id"]
        assert verdicts([res_py]) == verdicts([res_cpp])
    platforms = [r["device"]["platform"] for r in runs["py"]]
    assert platforms == ["Portable Computing Language", "Oclgrind"]  # in --device order
    for name in ("py", "cpp"):
        subdirs = sorted(p.name for p in (tmp_path / name).iterdir())
        assert len(subdirs) == 2 and all("_" in d for d in subdirs)


@pytest.mark.parametrize("rng", ["14", "18"])
def test_pocl_bundle_passes_on_oclgrind_where_the_platforms_agree(
    bundles: Bundles, cpp_replay: Path, rng: str
) -> None:
    """captures README: every dumped buffer of enqueues 0-21 is bit-identical on both."""
    _need("oclgrind")
    bundle = bundles.get("pyocl_pocl", rng)
    py, cpp = both(bundle, cpp_replay, "oclgrind")
    vp = verdicts(py)
    assert vp == verdicts(cpp)
    assert {v[0] for v in vp.values()} == {"equal"}


def test_pocl_chain_on_oclgrind_shows_the_documented_divergence(
    bundles: Bundles, cpp_replay: Path
) -> None:
    """captures README: on Oclgrind 22 sin_kernel's output differs in 1331 elements (1 ULP,
    first at index 0: -0.9271314 vs -0.9271315), 25 exp_kernel in 781 (1 ULP), 26 multiply
    in 1676 (up to 3 ULP).  Both runners say so, and pass with abs/rel tolerances."""
    _need("oclgrind")
    bundle = bundles.get("pyocl_pocl", "22-34")
    runs = [
        run_py(bundle, "--json", "--validate", "--device", "oclgrind"),
        run_cpp(cpp_replay, bundle, "--json", "--validate", "--device", "oclgrind"),
    ]
    assert [p.returncode for p in runs] == [1, 1]
    py, cpp = (json.loads(p.stdout) for p in runs)
    vp = verdicts(py)
    assert vp == verdicts(cpp)
    first_out = {k[0]: v for k, v in vp.items() if k[1] == "checks" and k[3] == (0,)}
    assert first_out[22] == ("different", 1331, 1331, 1.0)
    assert first_out[25] == ("different", 781, 781, 1.0)
    assert first_out[26] == ("different", 1676, 1676, 3.0)
    assert first_out[23][0] == first_out[24][0] == first_out[27][0] == "equal"
    step22 = py[0]["steps"][0]["checks"][0]["result"]["first"]
    assert step22["index"] == 0
    assert f"{step22['expected']:.7f}" == "-0.9271314" and f"{step22['actual']:.7f}" == "-0.9271315"
    cpp22 = cpp[0]["steps"][0]["checks"][0]["result"]["first"]
    assert cpp22["where"] == "[0]" and cpp22["expected"].startswith("-0.927131414")
    py2, cpp2 = both(bundle, cpp_replay, "oclgrind", "--atol", "1e-6", "--rtol", "1e-4")
    assert verdicts(py2) == verdicts(cpp2)
    assert py2[0]["ok"] and cpp2[0]["ok"]


def test_binary_only_bundle_runs_on_its_own_device_only(
    images_svm: Path, tmp_path: Path, cpp_replay: Path
) -> None:
    """Without sources the bundle carries the PoCL device binaries of the Replay folders."""
    _need("pocl")
    _need("oclgrind")
    cap = made_on(images_svm, tmp_path / "cap", None)
    binaries_made_here(cap)  # the captured AVX-512 binaries load only on such a CPU
    for p in [*cap.glob("CLI_*_source.cl"), *cap.glob("Replay/*/kernel.cl")]:
        p.unlink()
    here = pocl_here()
    bundle = tmp_path / "b"
    export_range(open_capture(cap), "0-8", bundle)
    bins = sorted(p.name for p in (bundle / "kernels").iterdir())
    suffix = "." + sanitize_component("_".join(here.lower().split()), max_len=60) + ".bin"
    assert len(bins) == 7 and all(n.endswith(suffix) for n in bins), (bins, suffix)
    py, cpp = both(bundle, cpp_replay, "pocl")
    assert verdicts(py) == verdicts(cpp)
    assert py[0]["ok"] and cpp[0]["ok"]
    for proc in (
        run_py(bundle, "--validate", "--device", "oclgrind"),
        run_cpp(cpp_replay, bundle, "--validate", "--device", "oclgrind"),
    ):
        assert proc.returncode == 1  # a device that cannot run it: an error, not incomplete
        assert "no source and no binary for Oclgrind Simulator" in proc.stderr
        assert here in proc.stderr
        assert "Traceback" not in proc.stderr


def test_misaligned_svm_offset_without_svm_is_a_clear_error(
    cpp_replay: Path, tmp_path: Path
) -> None:
    """On a device without SVM an SVM argument at an offset becomes a sub-buffer, which needs
    an aligned offset: both runners name the enqueue and the alignment, no traceback."""
    _need("oclgrind")
    from cltui.export.exporter import _runner_file, engine_modules

    b = tmp_path / "svm"
    (b / "data").mkdir(parents=True)
    (b / "data/in.bin").write_bytes(bytes(256))
    (b / "k.cl").write_text("__kernel void k(__global float* p) { p[0] = 1.0f; }\n")
    manifest = {
        "format": "cltui-replay-plan",
        "version": 1,
        "data": {"in": {"path": "data/in.bin", "size": 256}, "src": {"path": "k.cl", "size": 0}},
        "programs": {"p": {"label": "k", "source": "src", "options": "", "binaries": []}},
        "memory": {"s": {"kind": "svm", "label": "svm 0001", "size": 256}},
        "steps": [
            {
                "enqueue": 41,
                "kernel": "k",
                "program": "p",
                "global": [1],
                "local": None,
                "offset": None,
                "args": [{"index": 0, "kind": "svm", "mem": "s", "offset": 4}],
                "loads": [{"mem": "s", "data": "in", "why": "input", "note": ""}],
                "prechecks": [],
                "checks": [],
            }
        ],
    }
    seal_bundle(b, manifest)
    for name, data in engine_modules().items():
        (b / name).parent.mkdir(parents=True, exist_ok=True)
        (b / name).write_bytes(data)
    (b / "replay.py").write_bytes(_runner_file("python", "replay.py"))
    for proc in (
        run_py(b, "--device", "oclgrind"),
        run_cpp(cpp_replay, b, "--device", "oclgrind"),
    ):
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert "SVM offset 4 is not a multiple of its" in proc.stderr
        assert "Traceback" not in proc.stderr
    for proc in (
        run_py(b, "--device", "oclgrind", "--json"),
        run_cpp(cpp_replay, b, "--device", "oclgrind", "--json"),
    ):
        results = json.loads(proc.stdout)
        validate(results)  # docs/replay.schema.json: an error result
        (res,) = results
        assert res["status"] == "error" and res["failed_enqueue"] == 41, res
        assert res["device_choice"]["rule"] == "user"
    # a manifest that names no device: the first real device, and why
    proc = run_cpp(cpp_replay, b, "--json")
    assert "replay: device: the capture does not name its device; " in proc.stderr


def test_hash_only_bundle_is_checked_by_hash_in_both_runners(
    images_svm: Path, tmp_path: Path, cpp_replay: Path
) -> None:
    """A capture with hash-only dumps (DumpBufferHashes): the bundle carries the hashes, and
    both runners hash the replayed bytes (Python: a kernel on the device; C++: on the host)
    and agree: equal where the hash matches, different where it does not."""
    _need("pocl")
    from tests.conftest import hash_only_capture

    cap = hash_only_capture(images_svm, tmp_path / "cap")
    for folder in ("Enqueue_2_sample_linear", "Enqueue_3_volume_sum"):
        shutil.rmtree(cap / "Replay" / folder)
    exported = tmp_path / "exported"
    export_range(open_capture(cap), "2-3", exported)
    bundle = tmp_path / "fresh" / "bundle"
    shutil.copytree(exported, bundle)
    manifest = json.loads((bundle / "manifest.json").read_text())
    steps = manifest["steps"]
    hashed = {(s["enqueue"], c["label"]) for s in steps for c in s["checks"] if c.get("hash64")}
    assert hashed == {(2, "arg 2 (buffer 0003)"), (3, "arg 1 (buffer 0005)")}
    py = run_py(bundle, "--json", "--device", "pocl")
    cpp = run_cpp(cpp_replay, bundle, "--json", "--device", "pocl")
    assert py.returncode == cpp.returncode == 0, py.stderr[-2000:] + cpp.stderr[-2000:]
    for out in (py, cpp):
        (res,) = json.loads(out.stdout)
        got = {(s["enqueue"], c["label"]): c for s in res["steps"] for c in s["checks"]}
        assert got[(2, "arg 2 (buffer 0003)")]["status"] == "equal"
        assert got[(2, "arg 2 (buffer 0003)")]["summary"] == "hash matches"
        assert got[(3, "arg 1 (buffer 0005)")]["status"] == "different"
        assert got[(3, "arg 1 (buffer 0005)")]["summary"].startswith("hash ")
        assert not res["ok"]
    assert verdicts(json.loads(py.stdout)) == verdicts(json.loads(cpp.stdout))
    # --validate: exit 1 on the hash that does not match, in both
    assert run_py(bundle, "--validate", "--device", "pocl").returncode == 1
    assert run_cpp(cpp_replay, bundle, "--validate", "--device", "pocl").returncode == 1


def test_binary_only_bundle_from_another_cpu_builds_from_the_similar_binary(
    images_svm: Path, tmp_path: Path, cpp_replay: Path
) -> None:
    """No source, binaries made on a PoCL device this machine does not have (another CPU):
    both runners build from the binary of the device named most like theirs, say so in a
    note, and pass; Oclgrind, named like none of them, is still refused."""
    _need("pocl")
    _need("oclgrind")
    elsewhere = named_like_here("Elsewhere CPU 9000")[0]
    cap = made_on(images_svm, tmp_path / "cap", elsewhere)
    binaries_made_here(cap)  # made on a CPU of this one's kind: they load here
    for p in [*cap.glob("CLI_*_source.cl"), *cap.glob("Replay/*/kernel.cl")]:
        p.unlink()
    bundle = tmp_path / "b"
    export_range(open_capture(cap), "0-8", bundle)
    py, cpp = both(bundle, cpp_replay, "pocl")
    assert py[0]["ok"] and cpp[0]["ok"]
    assert verdicts(py) == verdicts(cpp)
    said = f"built from the binary made on {elsewhere}, a device named like {pocl_here()}"
    for res in (py[0], cpp[0]):
        assert any(said in n for n in res["notes"]), res["notes"]
    assert {b["how"] for b in py[0]["builds"].values()} == {f"binary made on {elsewhere}"}
    for proc in (
        run_py(bundle, "--validate", "--device", "oclgrind"),
        run_cpp(cpp_replay, bundle, "--validate", "--device", "oclgrind"),
    ):
        assert proc.returncode == 1  # a device that cannot run it: an error, not incomplete
        assert "no source and no binary for Oclgrind Simulator" in proc.stderr


@pytest.mark.parametrize(
    ("renamed", "rule"),
    [
        (None, "captured"),
        (LIKE_HERE, "most-alike"),
        ("Mystery GPU 9000", "real-before-simulator"),
    ],
)
def test_a_bundle_run_as_its_readme_says_picks_the_capturing_device(
    images_svm: Path, cpp_replay: Path, tmp_path: Path, renamed: str | None, rule: str
) -> None:
    """No --device: both runners replay on PoCL, not on Oclgrind, which ocl-icd lists first
    here; stderr and --json say which device and why, in the same words."""
    from cltui.replay import engine

    _need("pocl")
    _need("oclgrind")
    devices = engine.list_devices()
    pocl = next(d for d in devices if not engine.is_simulator(d))
    cap = made_on(images_svm, tmp_path, renamed)  # None: this machine's PoCL device
    bundle = tmp_path / "bundle"
    export_range(open_capture(cap), "0-3", bundle)
    ident = json.loads((bundle / "manifest.json").read_text())["bundle"]["capture"]["device"]
    named = {None: pocl_here(), LIKE_HERE: named_like_here()[0]}
    assert ident == {
        "name": named.get(renamed, renamed),
        "platform": "Portable Computing Language",
        "type": "CPU",
        "version": None,
        "driver": None,
    }
    readme = " ".join((bundle / "README.md").read_text().split())
    assert "Without `--device` both programs replay on the device that made the capture" in readme
    assert "else on the first device that is not a simulator (Oclgrind)" in readme
    whys = []
    for proc in (
        run_py(bundle, "--validate", "--json"),
        run_cpp(cpp_replay, bundle, "--validate", "--json"),
    ):
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
        validate(json.loads(proc.stdout))  # docs/replay.schema.json
        (res,) = json.loads(proc.stdout)
        assert res["device"]["id"] == pocl["id"] and res["status"] == "ok"
        assert res["device_choice"]["rule"] == rule
        why = res["device_choice"]["why"]
        assert f"replay: device: {why} (choose with --device)" in proc.stderr
        whys.append(why)
        text = run_py(bundle) if res["runner"] == "replay.py" else run_cpp(cpp_replay, bundle)
        assert text.returncode == 0 and f"replay: device: {why}" in text.stderr
    assert whys[0] == whys[1]
    assert f"{pocl['id']} {pocl['name']}" in whys[0]
    if rule == "captured" and engine.is_simulator(devices[0]):
        assert pocl["id"] != devices[0]["id"]  # the case of issue 11: Oclgrind listed first


@pytest.mark.parametrize(
    ("case", "rng", "mode", "status"),
    [
        ("fill_unknown", "0-3", "chain", "incomplete"),  # (a) a fill, no dumps after it
        ("fill_copy", "0-5", "strict", "pass"),  # a fill and a copy replayed as operations
        ("write", "0-4", "strict", "incomplete"),  # a host write strict mode cannot replay
        ("no_post", "0-3", "chain", "incomplete"),  # (c) a kernel without Post dumps
        ("pyocl", "14-38", "chain", "pass"),  # (b) everything replayed and checked
    ],
)
def test_both_runners_give_the_cli_verdict(
    case: str, rng: str, mode: str, status: str, pyocl_pocl: Path, cpp_replay: Path,
    tmp_path: Path,
) -> None:  # fmt: skip
    """(e) The exported replay.py (from a fresh folder) and replay.cpp give the same verdict
    status, line and exit code as ``cltui replay`` on the same range."""
    import numpy as np
    from click.testing import CliRunner

    from cltui.cli import main
    from tests.analysis_synth import HostOp
    from tests.test_verdict import SEVEN, N, _capture

    _need("pocl")
    data = np.arange(100, 100 + N, dtype=np.int32).tobytes()
    if case == "pyocl":
        cap = pyocl_pocl
    else:
        ops = {
            "fill_unknown": [HostOp("fill", "A", pattern=SEVEN, size=4 * N)],
            "fill_copy": [
                HostOp("fill", "A", pattern=SEVEN, offset=8, size=16),
                HostOp("copy", "B", src="A", offset=0, dst_offset=4, size=12),
            ],
            "write": [HostOp("write", "B", data=data, size=len(data))],
            "no_post": [],
        }[case]
        dumps = {"fill_unknown": (False, False), "no_post": (True, False)}.get(case, (True, True))
        cap = _capture(tmp_path, ops, pre=dumps[0], post=dumps[1])
    args = ["replay", str(cap), rng, "--mode", mode, "-d", "pocl", "--json"]
    cli = CliRunner().invoke(main, args)
    want = json.loads(cli.stdout)["verdict"]
    assert want["status"] == status, want["line"]
    first = tmp_path / "export" / "bundle"
    export_range(open_capture(cap), rng, first, mode=mode)
    bundle = tmp_path / "fresh" / "bundle"
    shutil.copytree(first, bundle)
    shutil.rmtree(first.parent)
    for proc in (
        run_py(bundle, "--validate", "--json", "--device", "pocl"),
        run_cpp(cpp_replay, bundle, "--validate", "--json", "--device", "pocl"),
    ):
        assert proc.returncode == cli.exit_code, proc.stdout[-3000:] + proc.stderr[-2000:]
        (res,) = json.loads(proc.stdout)
        assert res["verdict"]["status"] == want["status"]
        assert res["verdict"]["counts"] == want["counts"]
        assert res["verdict"]["line"] == want["line"]
    text = run_cpp(cpp_replay, bundle, "--validate", "--device", "pocl")
    assert text.stdout.splitlines()[1].strip() == want["line"]
    text = run_py(bundle, "--validate", "--device", "pocl")
    assert text.stdout.splitlines()[1].strip() == want["line"]
