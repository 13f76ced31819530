"""Files that are not regular files (issue 26): a FIFO (an open for reading blocks until a
writer comes), a link to ``/dev/zero`` (a read never ends) and a unix socket, in every file slot
of a capture, as the app's saved state, as a stored variant's files, a fleet inventory and a
bundle's manifest.  Each command ends (a hang detector with a generous bound), says one line
naming the file and shows no traceback; memory stays bounded (the address space of the child
that runs it is capped)."""

from __future__ import annotations

import os
import re
import resource
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from cltui.cli import main as cli_main
from tests.conftest import copy_capture
from tests.hang import bounded

LIMIT = 60.0  # seconds: each case takes well under one; a blocked open never answers
SPARE_MEMORY = 3 << 30  # address space a case may add (opening a capture takes ~1.5 GiB)

#: one file of each kind images_svm_pocl has (the capture's own names)
SLOTS = (
    "clintercept_log.txt",
    "clintercept_report.txt",
    "CLI_0000_4804838E_source.cl",
    "CLI_0000_4804838E_0000_A7B10208_options.txt",
    "CLI_0000_4804838E_0000_A7B10208_CPU_build_log.txt",
    "Replay/Enqueue_0_downsample/Argument1.bin",
    "Replay/Enqueue_0_downsample/worksizes.txt",
    "Replay/Enqueue_0_downsample/buildOptions.txt",
    "Replay/Enqueue_0_downsample/enqueueNumber.txt",
    "Replay/Enqueue_0_downsample/kernelName.txt",
    "Replay/Enqueue_0_downsample/kernel.cl",
    "Replay/Enqueue_0_downsample/ArgumentDataTypes.txt",
    "Replay/Enqueue_0_downsample/Image_MetaData_0.txt",
    "Replay/Enqueue_0_downsample/DeviceBinary0.bin",
    "Replay/Enqueue_0_downsample/Pre/Enqueue_0000_Kernel_downsample_Arg_0_Image_0000_64x48x1_128bpp.raw",
    "memDumpPreEnqueue/Enqueue_0002_Kernel_sample_linear_Arg_2_Buffer_0003.bin",
    "memDumpPostEnqueue/Enqueue_0002_Kernel_sample_linear_Arg_2_Buffer_0003.bin",
    "SetKernelArg/SetKernelArg_0006_Kernel_svm_scale_Arg_1.bin",
)
KINDS = ("fifo", "dev_zero", "socket")
#: how each kind is named in the one line
SAID = {
    "fifo": "a FIFO, not a regular file",
    "dev_zero": "(to /dev/zero)",
    "socket": "a socket, not a regular file",
}


def make_special(path: Path, kind: str) -> None:
    """``path`` (removed first) made a FIFO, a link to ``/dev/zero`` or a socket's node."""
    if path.is_symlink() or path.exists():
        path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        os.mknod(path, stat.S_IFSOCK | 0o600)  # what bind() leaves, without its path limit
    else:
        os.symlink("/dev/zero", path)


def _vm_size() -> int:
    with open("/proc/self/status") as f:
        m = re.search(r"VmSize:\s+(\d+) kB", f.read())
    return int(m[1]) * 1024 if m else 0


def run_bounded(desc: str, fn: Callable[[], None]) -> None:
    """``fn`` in a forked child under :data:`LIMIT` seconds and a capped address space."""

    def capped() -> None:
        cap = _vm_size() + SPARE_MEMORY
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        fn()

    bounded(desc, capped, LIMIT)


def _cli(*args: str) -> str:
    r = CliRunner().invoke(cli_main, list(args))
    assert "Traceback" not in r.output, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    return r.output


@pytest.mark.child
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("slot", SLOTS)
def test_every_capture_file_slot(images_svm: Path, tmp_path: Path, slot: str, kind: str) -> None:
    cap = copy_capture(images_svm, tmp_path)
    make_special(cap / slot, kind)
    m = re.search(r"(?:Enqueue_|SetKernelArg_)0*(\d+)", slot)
    enq = m[1] if m else "0"

    def read() -> None:
        out = _cli("show", str(cap), enq) + _cli("info", str(cap))
        lines = [ln for ln in out.splitlines() if slot in ln and SAID[kind] in ln]
        assert lines, f"no line names {slot} ({SAID[kind]}):\n{out}"
        assert "outside the capture" in lines[0] or kind != "dev_zero"

    run_bounded(f"show/info with {slot} as {kind}", read)


@pytest.mark.child
@pytest.mark.parametrize("kind", KINDS)
def test_a_replay_folder_file_is_named_by_show(
    images_svm: Path, tmp_path: Path, kind: str
) -> None:
    """The Replay folder's files are read when its enqueue is shown: the line is show's."""
    cap = copy_capture(images_svm, tmp_path)
    make_special(cap / "Replay/Enqueue_0_downsample/worksizes.txt", kind)

    def read() -> None:
        out = _cli("show", str(cap), "0")
        assert "Replay/Enqueue_0_downsample/worksizes.txt: enqueue 0: " in out, out
        _cli("show", str(cap), "0", "--json")

    run_bounded(f"show with worksizes.txt as {kind}", read)


@pytest.mark.child
@pytest.mark.parametrize("kind", KINDS)
def test_the_saved_state_file(tmp_path: Path, kind: str) -> None:
    from cltui.tui.capture_state import load_state

    state = tmp_path / "state.json"
    make_special(state, kind)

    def read() -> None:
        got, notice = load_state(state)
        assert got == {} and notice is not None and "\n" not in notice
        assert str(state) in notice
        word = {"fifo": "a FIFO", "socket": "a socket", "dev_zero": "a symbolic link"}[kind]
        assert f"is {word}" in notice, notice

    run_bounded(f"the saved state as {kind}", read)


@pytest.mark.child
@pytest.mark.parametrize("what", ["variant.json", "0_prog.cl"])
@pytest.mark.parametrize("kind", KINDS)
def test_a_stored_variant(
    images_svm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, what: str
) -> None:
    from cltui.replay.experiment.store import capture_key, variants_root

    monkeypatch.setenv("CLTUI_DATA_DIR", str(tmp_path / "data"))
    folder = variants_root() / capture_key(images_svm) / "v1"
    folder.mkdir(parents=True)
    (folder / "variant.json").write_text(
        '{"name": "v1", "range": "0", "programs": [{"program": "p", "file": "0_prog.cl"}]}'
    )
    (folder / "0_prog.cl").write_text("kernel void k() {}\n")
    make_special(folder / what, kind)

    def read() -> None:
        out = _cli("variant", "list", str(images_svm))
        (line,) = [ln for ln in out.splitlines() if ln.startswith("v1")]
        assert str(folder / what) in line, out
        word = {"fifo": "a FIFO", "socket": "a socket", "dev_zero": "a symbolic link"}[kind]
        assert f"is {word}" in line, out

    run_bounded(f"variant list with {what} as {kind}", read)


@pytest.mark.child
@pytest.mark.parametrize("kind", KINDS)
def test_a_fleet_inventory(tmp_path: Path, kind: str) -> None:
    from cltui.fleet.inventory import InventoryError, read_inventory

    inv = tmp_path / "hosts.ini"
    make_special(inv, kind)
    said = {"fifo": "a FIFO", "socket": "a socket", "dev_zero": "a character device"}[kind]

    def read() -> None:
        with pytest.raises(InventoryError) as exc:
            read_inventory(inv)
        assert str(exc.value) == f"{inv}: cannot read the inventory: {said}, not a regular file"

    run_bounded(f"an inventory as {kind}", read)


@pytest.mark.child
@pytest.mark.parametrize("kind", KINDS)
def test_a_bundle_manifest(tmp_path: Path, kind: str) -> None:
    from cltui.replay.feasibility import BundleError, load_bundle

    bundle = tmp_path / "b"
    bundle.mkdir()
    make_special(bundle / "manifest.json", kind)

    def read() -> None:
        # the bundle's own check (its runners' words): never opened, never blocking
        with pytest.raises(BundleError, match=r"bundle damaged: manifest\.json is (a link|not a "
                           r"regular file)"):  # fmt: skip
            load_bundle(bundle)

    run_bounded(f"a bundle's manifest as {kind}", read)


@pytest.mark.child
def test_links_inside_the_capture_are_still_followed(images_svm: Path, tmp_path: Path) -> None:
    """The confine rule is kept: a link to a file inside the capture is read through."""
    cap = copy_capture(images_svm, tmp_path)
    ws = cap / "Replay/Enqueue_0_downsample/worksizes.txt"
    shutil.move(ws, cap / "ws.txt")
    ws.symlink_to("../../ws.txt")

    def read() -> None:
        out = _cli("show", str(cap), "0")
        assert "worksizes.txt" not in out, out

    run_bounded("a link inside the capture", read)


@pytest.mark.child
@pytest.mark.parametrize("kind", KINDS)
def test_safeopen_names_what_it_refuses(tmp_path: Path, kind: str) -> None:
    from cltui.capture.safeopen import NotRegular, read_limited

    p = tmp_path / "f"
    make_special(p, kind)

    def read() -> None:
        for follow in (False, True):
            with pytest.raises(NotRegular) as exc:
                read_limited(p, 16, follow=follow)
            word = {"fifo": "a FIFO", "socket": "a socket"}.get(
                kind, "a character device" if follow else "a symbolic link (not followed)"
            )
            assert str(exc.value) == f"{p} is {word}, not a regular file"

    run_bounded(f"safeopen on {kind}", read)


def test_safeopen_reads_are_bounded(tmp_path: Path) -> None:
    from cltui.capture.safeopen import TooLarge, read_limited

    p = tmp_path / "f"
    p.write_bytes(b"x" * 17)
    assert read_limited(p, 17) == b"x" * 17
    with pytest.raises(TooLarge, match=f"^{re.escape(str(p))} is larger than 16 bytes: not read$"):
        read_limited(p, 16)
    link = tmp_path / "link"
    link.symlink_to(p)
    assert read_limited(link, 17, follow=True) == b"x" * 17
