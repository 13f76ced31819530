"""Export bundles (no device needed): layout, dedup, checksums, tar, safety, CLI.

Facts are computed here from the raw capture files (sha256 of the dump files the plan
references), not taken from the exporter.
"""

from __future__ import annotations

import ast
import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cltui.capture import open_capture
from cltui.capture.names import sanitize_component
from cltui.capture.ranges import parse_range
from cltui.cli import main as cli_main
from cltui.export import BundleWriter, ExportError, export_range, stream_tar
from cltui.export.bundle import safe_relpath
from cltui.export.exporter import engine_modules
from cltui.export.includes import resolve_includes
from cltui.progress import CancelToken, ProgressEvent
from cltui.replay.plan import build_plan
from tests.conftest import REPO, copy_capture


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _tree(root: Path) -> dict[str, str]:
    """relative path -> sha256 of every file under root."""
    return {p.relative_to(root).as_posix(): _sha(p) for p in sorted(root.rglob("*")) if p.is_file()}


def _export(cap_path: Path, rng: str, out: Path, **kw: Any) -> Any:
    return export_range(open_capture(cap_path), rng, out, **kw)


# --------------------------------------------------------------------------- layout


def test_bundle_layout_single_kernel(pyocl_pocl: Path, tmp_path: Path) -> None:
    out = tmp_path / "b"
    res = _export(pyocl_pocl, "14", out)
    names = {p.name for p in out.iterdir()}
    assert names == {
        "manifest.json", "data", "kernels", "replay.py", "lib",
        "replay.cpp", "cpp", "CMakeLists.txt", "README.md", "SHA256SUMS",
    }  # fmt: skip
    assert res.steps == 1 and res.enqueues == [14]
    # the engine package is cltui's own, whole and byte for byte, with the four modules it
    # imports; the parent packages are markers
    engine = sorted(p.name for p in (REPO / "cltui/replay/engine").iterdir() if p.is_file())
    assert "core.py" in engine and "compare.py" in engine and "__init__.py" in engine
    assert sorted(p.name for p in (out / "lib/cltui/replay/engine").iterdir()) == engine
    for name in engine:
        want = (REPO / "cltui/replay/engine" / name).read_bytes()
        assert (out / "lib/cltui/replay/engine" / name).read_bytes() == want, name
    for rel in ("errors.py", "text/units.py", "text/shellwords.py", "capture/safeopen.py"):
        assert (out / "lib/cltui" / rel).read_bytes() == (REPO / "cltui" / rel).read_bytes()
    lib = {p.relative_to(out).as_posix() for p in (out / "lib").rglob("*") if p.is_file()}
    assert lib == set(engine_modules())
    for marker in ("__init__.py", "capture/__init__.py", "replay/__init__.py", "text/__init__.py"):
        body = ast.parse((out / "lib/cltui" / marker).read_text()).body
        assert len(body) == 1 and isinstance(body[0], ast.Expr), marker  # a docstring only
    assert (out / "replay.cpp").read_bytes() == (
        REPO / "cltui/runners/cpp/replay.cpp"
    ).read_bytes()
    headers = sorted(p.name for p in (REPO / "cltui/runners/cpp/cpp").glob("*.hpp"))
    made = ["manifest_schema.hpp"]  # the engine's manifest.schema.json, as a C++ string
    assert sorted(p.name for p in (out / "cpp").iterdir()) == sorted([*headers, *made])
    assert len(headers) >= 8
    for name in headers:
        want = (REPO / "cltui/runners/cpp/cpp" / name).read_bytes()
        assert (out / "cpp" / name).read_bytes() == want
    schema = (REPO / "cltui/replay/engine/manifest.schema.json").read_text("utf-8")
    assert schema in (out / "cpp/manifest_schema.hpp").read_text("utf-8")
    m = json.loads((out / "manifest.json").read_text())
    assert m["format"] == "cltui-replay-plan" and m["version"] >= 1
    assert m["bundle"]["format"] == "cltui-bundle" and m["bundle"]["version"] == 1
    assert m["bundle"]["capture"]["devices"] == ["pthread-skylake-avx512-AMD EPYC"]
    step = m["steps"][0]
    assert step["kernel"] == "clip_by_rank"
    # the 16-byte struct clip_params_t passed by value: argument 6 (README of the captures)
    struct = next(a for a in step["args"] if a["index"] == 6)
    raw = (pyocl_pocl / "Replay/Enqueue_14_clip_by_rank/Argument6.bin").read_bytes()
    assert struct["kind"] == "scalar" and bytes.fromhex(struct["hex"]) == raw
    # every data reference points at a bundle file with that sha256 and the captured bytes
    for key, entry in m["data"].items():
        f = out / entry["path"]
        assert f.is_file() and _sha(f) == entry["sha256"]
        assert entry["sha256"] == _sha(pyocl_pocl / entry["captured_path"])
        assert key == entry["captured_path"]
    # the pyopencl include folder of the capturing machine is not passed on
    prog = m["programs"][step["program"]]
    assert "/home/user/venv" in prog["captured_options"]
    assert "/home/user/venv" not in prog["options"]
    readme = (out / "README.md").read_text()
    assert "pyopencl_lib_pocl" in readme and "clip_by_rank" in readme
    assert "python replay.py --validate" in readme and "cmake -S . -B build" in readme


def test_python_only_bundle_has_no_cpp(images_svm: Path, tmp_path: Path) -> None:
    out = tmp_path / "py"
    res = _export(images_svm, "0-3", out, langs="python")
    assert res.langs == ["python"]
    assert not (out / "replay.cpp").exists() and not (out / "CMakeLists.txt").exists()
    assert not (out / "cpp").exists()
    assert (out / "replay.py").stat().st_mode & 0o111


def test_headers_included_by_sources_travel_with_the_bundle(
    pyocl_pocl: Path, tmp_path: Path
) -> None:
    """rng_gen_philox (enqueue 0) includes pyopencl-random123/philox.cl, which includes more."""
    out = tmp_path / "rng"
    cap = open_capture(pyocl_pocl)
    export_range(cap, "0", out)
    m = json.loads((out / "manifest.json").read_text())
    prog = m["programs"][m["steps"][0]["program"]]
    assert prog["include_dirs"] == ["kernels/include/0"]
    inc = out / "kernels/include/0"
    got = sorted(p.relative_to(inc).as_posix() for p in inc.rglob("*") if p.is_file())
    assert got == [
        "pyopencl-random123/array.h",
        "pyopencl-random123/openclfeatures.h",
        "pyopencl-random123/philox.cl",
    ]
    # from the local pyopencl package (the captured /home/user/venv/... is not this machine's)
    assert {h["origin"] for h in m["bundle"]["host_files"]} == {"pyopencl"}
    assert m["bundle"]["missing_includes"] == m["bundle"]["unread_include_dirs"] == []
    assert "from pyopencl's own package" in (out / "README.md").read_text()
    # --no-host-includes: not even pyopencl's, and the bundle says what it lacks
    res = export_range(cap, "0", tmp_path / "none", pyopencl_headers=False)
    assert res.host_files == [] and not (tmp_path / "none/kernels/include").exists()
    assert [x.include for x in res.missing_includes] == ["pyopencl-random123/philox.cl"]


def test_include_resolution_refuses_paths_outside_the_folder(tmp_path: Path) -> None:
    inc = tmp_path / "inc"
    (inc / "sub").mkdir(parents=True)
    (inc / "sub/a.h").write_text('#include "b.h"\n#include "../../secret.h"\n')
    (inc / "sub/b.h").write_text("// b\n")
    (tmp_path / "secret.h").write_text("secret")
    src = b'#include <sub/a.h>\n#include "/etc/passwd"\n#include <../secret.h>\n'
    options = f"-I {inc} -DX=1 -I /nonexistent/dir"
    # the captured folder is not read: nothing found, the folder named, the include missing
    res = resolve_includes(src, options)
    assert res.headers == {} and res.unread == [str(inc)] and res.missing == ["sub/a.h"]
    assert res.options == options
    # the user names it: searched, confined to it
    res = resolve_includes(src, options, [inc])
    assert {rel for _i, rel in res.headers} == {"sub/a.h", "sub/b.h"}
    assert res.options == options and res.unread == [] and res.missing == []
    assert sum("skipped" in n for n in res.notes) == 3


# --------------------------------------------------------------------------- dedup


@pytest.mark.child
def test_fifty_kernel_chain_stores_each_content_once(heat2d: Path, tmp_path: Path) -> None:
    cap = open_capture(heat2d)
    rng = "122370-122424"
    plan = build_plan(cap, parse_range(rng), "chain").to_manifest()
    assert len(plan["steps"]) >= 50
    sources = {p["source"] for p in plan["programs"].values() if p.get("source")}
    dumps = [k for k in plan["data"] if k not in sources]
    digests: dict[str, int] = {}
    for key in dumps:
        f = heat2d / plan["data"][key]["path"]
        digests[_sha(f)] = f.stat().st_size
    assert len(dumps) > len(digests)  # the range does touch the same contents repeatedly
    out = tmp_path / "heat"
    res = export_range(cap, rng, out)
    files = sorted((out / "data").iterdir())
    assert {f.name for f in files} == {f"{d}.bin" for d in digests}
    assert sum(f.stat().st_size for f in files) == sum(digests.values())
    assert res.data_files == len(digests) and res.data_bytes == sum(digests.values())
    for f in files:
        assert _sha(f) + ".bin" == f.name


# --------------------------------------------------------------------------- checksums, tar


@pytest.mark.child
def test_sha256sums_verify_with_coreutils(images_svm: Path, tmp_path: Path) -> None:
    out = tmp_path / "b"
    _export(images_svm, "0-8", out)
    lines = (out / "SHA256SUMS").read_text().splitlines()
    listed = {line.split("  ", 1)[1] for line in lines}
    assert listed == set(_tree(out)) - {"SHA256SUMS"}
    if shutil.which("sha256sum") is None:
        pytest.skip("sha256sum not installed")
    proc = subprocess.run(
        ["sha256sum", "-c", "--strict", "SHA256SUMS"], cwd=out, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (out / "manifest.json").write_text("{}")
    proc = subprocess.run(["sha256sum", "-c", "SHA256SUMS"], cwd=out, capture_output=True)
    assert proc.returncode != 0


def test_tar_stream_unpacks_to_the_same_files(images_svm: Path, tmp_path: Path) -> None:
    out = tmp_path / "b"
    _export(images_svm, "0-8", out)
    buf = io.BytesIO()
    stream_tar(out, buf, arcname="bundle")
    buf.seek(0)
    with tarfile.open(fileobj=buf, mode="r:") as tar:
        assert all(m.name == "bundle" or m.name.startswith("bundle/") for m in tar.getmembers())
        tar.extractall(tmp_path / "x", filter="data")
    assert _tree(tmp_path / "x/bundle") == _tree(out)
    assert os.access(tmp_path / "x/bundle/replay.py", os.X_OK)


@pytest.mark.child
def test_cli_tar_to_stdout_unpacks_with_tar(images_svm: Path, tmp_path: Path) -> None:
    """The real pipe: ``cltui export ... --tar - | tar x``."""
    exe = REPO / ".venv/bin/cltui"
    if not exe.exists() or shutil.which("tar") is None:
        pytest.skip("cltui entry point or tar not available")
    dest = tmp_path / "unpacked"
    dest.mkdir()
    cmd = f"'{exe}' export '{images_svm}' 0-3 -o mybundle --tar - | tar x -C '{dest}'"
    proc = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "exported 4 kernel enqueues" in proc.stderr
    ref = tmp_path / "ref"
    _export(images_svm, "0-3", ref)
    got, want = _tree(dest / "mybundle"), _tree(ref)
    assert set(got) == set(want)
    # identical except the two files that carry the creation time
    assert {k for k in got if got[k] != want[k]} <= {"manifest.json", "README.md", "SHA256SUMS"}
    assert not any(p.name.startswith("cltui-export-") for p in Path(tmp_path).iterdir())


# --------------------------------------------------------------------------- safety


def test_existing_outdir_needs_force_and_is_replaced_whole(
    images_svm: Path, tmp_path: Path
) -> None:
    out = tmp_path / "b"
    _export(images_svm, "0", out)  # a bundle (--force replaces only those), a file added
    (out / "old.txt").write_text("keep me unless --force")
    with pytest.raises(ExportError, match="already exists"):
        _export(images_svm, "0", out)
    assert (out / "old.txt").read_text() == "keep me unless --force"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b"]  # no temp folder left
    _export(images_svm, "0", out, force=True)
    assert not (out / "old.txt").exists() and (out / "manifest.json").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b"]  # old tree removed


def test_existing_file_is_never_replaced(images_svm: Path, tmp_path: Path) -> None:
    target = tmp_path / "afile"
    target.write_text("x")
    with pytest.raises(ExportError, match="not a folder"):
        _export(images_svm, "0", target, force=True)
    assert target.read_text() == "x"


@pytest.mark.child
def test_cancel_leaves_nothing_behind(heat2d: Path, tmp_path: Path) -> None:
    cancel = CancelToken()
    seen: list[float] = []

    def progress(event: ProgressEvent) -> None:
        frac = event.fraction or 0.0
        seen.append(frac)
        if frac > 0.1:
            cancel.cancel()

    with pytest.raises(ExportError, match="cancelled"):
        export_range(
            open_capture(heat2d), "122380-122419", tmp_path / "b", progress=progress, cancel=cancel
        )
    assert list(tmp_path.iterdir()) == []
    assert seen and all(0.0 <= f <= 1.0 for f in seen)


def test_progress_reaches_one(images_svm: Path, tmp_path: Path) -> None:
    seen: list[float] = []
    _export(images_svm, "0-8", tmp_path / "b", progress=lambda e: seen.append(e.fraction or 0.0))
    assert seen[0] == 0.0 and seen[-1] == 1.0 and seen == sorted(seen)


def test_bundle_paths_are_checked() -> None:
    for bad in ["../x", "/etc/passwd", "a/../../b", "a\\b", "", "a//b", ".hidden", "a/./b"]:
        with pytest.raises(ValueError):
            safe_relpath(bad)
    assert safe_relpath("data/ab.bin") == "data/ab.bin"


def test_writer_refuses_a_path_outside(tmp_path: Path) -> None:
    with BundleWriter(tmp_path / "b") as w:
        with pytest.raises(ValueError):
            w.write_text("../escape.txt", "no")
        w.write_text("ok.txt", "yes")
        w.write_checksums()
        w.commit()
    assert not (tmp_path / "escape.txt").exists()
    assert (tmp_path / "b/ok.txt").read_text() == "yes"


def _make_evil_capture(src: Path, dest: Path, *, drop_source: bool) -> Path:
    """images_svm_pocl with kernel gather_rgba renamed ``../../evil`` everywhere it can be.

    The log, the program source and the Replay folder's kernelName.txt name the kernel
    ``../../evil``; the device is called ``../../../evil dev``; file names (which cannot hold
    ``/``) get ``.._.._evil``.  The source also tries to include files outside its include
    folder.  With ``drop_source`` the program exists only as device binaries, whose bundle
    file name then comes from the (evil) device name.
    """
    cap = copy_capture(src, dest)
    for p in list(cap.rglob("*")):
        if p.is_file() and p.suffix in (".txt", ".cl"):
            b = p.read_bytes()
            nb = b.replace(b"gather_rgba", b"../../evil").replace(
                b"pthread-skylake-avx512-AMD EPYC", b"../../../evil dev"
            )
            if p.name.endswith("_source.cl"):
                nb = b'#include "../../../../etc/passwd"\n#include <../evil.h>\n' + nb
            if nb != b:
                p.write_bytes(nb)
    for p in sorted(cap.rglob("*"), key=lambda q: -len(q.parts)):
        if "gather_rgba" in p.name:
            p.rename(p.with_name(p.name.replace("gather_rgba", ".._.._evil")))
    if drop_source:
        for p in [*cap.glob("CLI_*_source.cl"), *cap.glob("Replay/*/kernel.cl")]:
            p.unlink()
    return cap


@pytest.mark.parametrize("drop_source", [False, True])
def test_evil_kernel_name_exports_safely(
    images_svm: Path, tmp_path: Path, drop_source: bool
) -> None:
    cap_path = _make_evil_capture(images_svm, tmp_path / "caps", drop_source=drop_source)
    before_cap = _tree(cap_path)
    work = tmp_path / "w" / "x" / "y"
    work.mkdir(parents=True)
    out = work / "out"
    cap = open_capture(cap_path)
    assert "../../evil" in cap.kernel_names
    res = export_range(cap, "8", out)
    assert res.enqueues == [8]
    # nothing was written anywhere but inside OUTDIR
    outside = [
        p
        for p in tmp_path.rglob("*")
        if not p.is_relative_to(out) and not p.is_relative_to(tmp_path / "caps")
    ]
    assert sorted(p.relative_to(tmp_path).as_posix() for p in outside) == ["w", "w/x", "w/x/y"]
    assert _tree(cap_path) == before_cap  # the capture is never modified
    for p in out.rglob("*"):
        assert not p.is_symlink()
        assert p.resolve().is_relative_to(out.resolve())
        for part in p.relative_to(out).parts:
            assert sanitize_component(part) == part
    m = json.loads((out / "manifest.json").read_text())
    assert m["steps"][0]["kernel"] == "../../evil"
    assert "`../../evil`" in (out / "README.md").read_text()
    if drop_source:
        (prog,) = m["programs"].values()
        assert prog["source"] is None and len(prog["binaries"]) == 1
        path = m["data"][prog["binaries"][0]["data"]]["path"]
        assert path.startswith("kernels/") and "/" not in path[len("kernels/") :]
        assert prog["binaries"][0]["device"] == "../../../evil dev"
    else:
        assert not (out / "kernels/include").exists()
        assert any("skipped" in n for n in m["bundle"]["notes"])


def test_capture_is_not_modified(images_svm: Path, tmp_path: Path) -> None:
    cap_path = copy_capture(images_svm, tmp_path / "cap")
    before = _tree(cap_path)
    mtimes = {p: p.stat().st_mtime_ns for p in cap_path.rglob("*")}
    _export(cap_path, "0-8", tmp_path / "b")
    assert _tree(cap_path) == before
    assert {p: p.stat().st_mtime_ns for p in cap_path.rglob("*")} == mtimes


# --------------------------------------------------------------------------- CLI


def test_cli_export_json_and_errors(images_svm: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "b"
    r = runner.invoke(
        cli_main,
        [
            "export",
            str(images_svm),
            "0-3",
            "-o",
            str(out),
            "--json",
            "--lang",
            "python",
            "--mode",
            "isolated",
            "--ulp",
            "2",
        ],
    )
    assert r.exit_code == 0, r.output
    info = json.loads(r.stdout)
    assert info["enqueues"] == [0, 1, 2, 3] and info["mode"] == "isolated"
    m = json.loads((out / "manifest.json").read_text())
    assert m["tolerance"]["ulp"] == 2 and m["bundle"]["mode"] == "isolated"
    # an existing folder without --force: exit 2, one line, nothing changed
    r = runner.invoke(cli_main, ["export", str(images_svm), "0-3", "-o", str(out)])
    assert r.exit_code == 2 and "already exists" in r.stderr and "Traceback" not in r.output
    r = runner.invoke(cli_main, ["export", str(images_svm), "0-3", "-o", str(out), "--force"])
    assert r.exit_code == 0
    for args, msg in [
        (["9-3"], "bad range"),
        (["100-200"], "no kernel enqueue"),
        (["0", "--lang", "rust"], "unknown language"),
        (["0-"], "-o OUTDIR"),
    ]:
        extra = [] if msg == "-o OUTDIR" else ["-o", str(tmp_path / "z")]
        r = runner.invoke(cli_main, ["export", str(images_svm), *args, *extra])
        assert r.exit_code == 2, r.output
        assert msg in r.stderr and "Traceback" not in r.output
    r = runner.invoke(cli_main, ["export", str(tmp_path / "nope"), "0", "-o", str(tmp_path / "z")])
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert not (tmp_path / "z").exists()


def test_cli_tar_file(images_svm: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    target = tmp_path / "b.tar"
    r = runner.invoke(cli_main, ["export", str(images_svm), "0", "--tar", str(target)])
    assert r.exit_code == 0, r.output
    with tarfile.open(target) as tar:
        names = tar.getnames()
    top = names[0]
    assert top == "images_svm_pocl-0"  # bundle_name(): <capture>-<range>
    assert f"{top}/manifest.json" in names and f"{top}/SHA256SUMS" in names
    r = runner.invoke(cli_main, ["export", str(images_svm), "0", "--tar", str(target)])
    assert r.exit_code == 2 and "already exists" in r.stderr
    cap = copy_capture(images_svm, tmp_path / "c")
    r = runner.invoke(cli_main, ["export", str(cap), "0", "--tar", str(cap / "b.tar")])
    assert r.exit_code == 2 and "inside the capture" in r.stderr
    assert not (cap / "b.tar").exists()


def test_kernel_filter_range(pyocl_pocl: Path, tmp_path: Path) -> None:
    """``22-34/multiply``: only the multiply launches of the window (README: 24, 26, 31)."""
    res = _export(pyocl_pocl, "22-34/multiply", tmp_path / "b")
    assert res.enqueues == [24, 26, 31]
    m = json.loads((tmp_path / "b/manifest.json").read_text())
    assert m["bundle"]["range"] == "22-34/multiply"
    assert {s["kernel"] for s in m["steps"]} == {"multiply"}


def test_outdir_inside_or_around_the_capture_is_refused(images_svm: Path, tmp_path: Path) -> None:
    cap = copy_capture(images_svm, tmp_path / "c")
    before = _tree(cap)
    for out, force in ((cap / "bundle", False), (cap, True), (cap.parent, True)):
        with pytest.raises(ExportError, match="capture"):
            _export(cap, "0", out, force=force)
    assert _tree(cap) == before


def test_a_dump_linking_out_of_the_capture_is_not_exported(
    images_svm: Path, tmp_path: Path
) -> None:
    cap = copy_capture(images_svm, tmp_path / "c")
    secret = tmp_path / "secret.bin"
    secret.write_bytes(b"s" * 256)
    dump = next(cap.glob("memDumpPreEnqueue/Enqueue_0008_*_Arg_2_*.bin"))
    dump.unlink()
    dump.symlink_to(secret)
    # the capture model does not read through the link (a problem); the export goes on
    # without that dump, and nothing of the host file travels with the bundle
    from cltui.capture import open_capture

    assert any("leads outside the capture" in str(p) for p in open_capture(cap).problems)
    _export(cap, "8", tmp_path / "b")
    for f in (tmp_path / "b").rglob("*"):
        assert not f.is_symlink()
        assert not (f.is_file() and f.read_bytes() == b"s" * 256)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b", "c", "secret.bin"]


def test_a_write_error_is_one_line_and_leaves_nothing(
    images_svm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk names the bundle file being written (it said "cannot read" the capture's
    file that was being copied)."""
    import errno
    import io

    class Full(io.RawIOBase):
        def writable(self) -> bool:
            return True

        def write(self, b: Any) -> int:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    real_open = Path.open

    def open_(self: Path, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if "w" in mode and "data" in self.parts:  # the bundle's data files: the disk is full
            return io.BufferedWriter(Full())
        return real_open(self, mode, *args, **kwargs)

    monkeypatch.setattr(Path, "open", open_)
    with pytest.raises(ExportError) as info:
        _export(images_svm, "0-8", tmp_path / "b")
    text = str(info.value)
    assert text.startswith(f"cannot write {tmp_path / 'b' / 'data'}/"), text
    assert text.endswith(".bin: No space left on device") and "\n" not in text
    assert list(tmp_path.iterdir()) == []
