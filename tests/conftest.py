"""Shared fixtures: the real captures in ../shared/captures (read-only)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("CLTUI_SHARED", REPO.parent / "shared")).resolve()
CAPTURES = SHARED / "captures"
SMALL_CAPTURES = [
    "images_svm_pocl",
    "opencv_tapi_pocl",
    "pyopencl_lib_pocl",
    "pyopencl_lib_oclgrind",
]


def capture_path(name: str) -> Path:
    p = CAPTURES / name
    if not p.is_dir():
        pytest.skip(f"shared capture {name} not found under {CAPTURES}")
    return p


@pytest.fixture(autouse=True)
def _state_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test remembers captures (bookmarks, position: cltui.tui.capture_state) in a
    state folder of its own, never the user's, and finds nothing from another test."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))


@pytest.fixture(scope="session")
def images_svm() -> Path:
    return capture_path("images_svm_pocl")


@pytest.fixture(scope="session")
def opencv() -> Path:
    return capture_path("opencv_tapi_pocl")


@pytest.fixture(scope="session")
def pyocl_pocl() -> Path:
    return capture_path("pyopencl_lib_pocl")


@pytest.fixture(scope="session")
def pyocl_oclgrind() -> Path:
    return capture_path("pyopencl_lib_oclgrind")


@pytest.fixture(scope="session")
def heat2d(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The 204,011-enqueue capture, unpacked once per session into a temp dir."""
    archive = CAPTURES / "heat2d_large" / "heat2d_large.tar.zst"
    if not archive.is_file():
        pytest.skip("heat2d_large archive not found")
    cached = os.environ.get("CLTUI_HEAT2D_DIR")
    if cached and (Path(cached) / "clintercept_log.txt").is_file():
        return Path(cached)
    dest = tmp_path_factory.mktemp("heat2d")
    if shutil.which("zstd") is None:
        pytest.skip("zstd is not installed")
    subprocess.run(["tar", "--zstd", "-xf", str(archive), "-C", str(dest)], check=True)
    return dest / "heat2d_large"


def copy_capture(src: Path, dest: Path) -> Path:
    """A writable copy of a capture (for tests that break it on purpose)."""
    out = dest / src.name
    shutil.copytree(src, out)
    for p in [out, *out.rglob("*")]:
        p.chmod(p.stat().st_mode | 0o200)
    return out


def rename_device(capture: Path, old: str, new: str) -> None:
    """Rewrite a (copied) capture's log as if its device had been named ``new``.

    The shared PoCL captures were made on an AMD EPYC, and PoCL names its device after the
    CPU; a test that needs "the device that made the capture" renames it after this
    machine's PoCL device (its binaries load there: both are PoCL 3.1 skylake-avx512).
    """
    for log in capture.glob("clintercept_*.txt"):
        log.write_bytes(log.read_bytes().replace(old.encode(), new.encode()))


def hash_only_capture(images_svm: Path, dest: Path) -> Path:
    """A copy of images_svm_pocl as if captured with DumpBufferHashes: its buffer dumps hold
    the layer's 64-bit hash, enqueue 3's Post one a hash that will not match; the Replay
    folders of enqueues 2 and 3 (raw dumps, preferred over hashes) removed."""
    from cltui.capture.hashing import cli_hash64

    cap_dir = copy_capture(images_svm, dest)
    log = cap_dir / "clintercept_log.txt"
    marker = "Control LogToFile is set to non-default value: true\n"
    log.write_text(
        log.read_text().replace(
            marker, marker + "Control DumpBufferHashes is set to non-default value: true\n", 1
        )
    )
    for d in ("memDumpPreEnqueue", "memDumpPostEnqueue"):
        for f in (cap_dir / d).glob("*_Buffer_*.bin"):
            data = f.read_bytes()
            if f.name.startswith("Enqueue_0003_") and d == "memDumpPostEnqueue":
                data = data[:-1] + bytes([data[-1] ^ 1])  # a hash that will not match
            f.write_text(f"{cli_hash64(data):x}\n")
    return cap_dir


@pytest.fixture(scope="module")
def ssh_hosts(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """A factory of real sshd "hosts" on localhost (``tests/sshd_hosts.py``): call it with
    ``HostSpec``s, get the started hosts (ports, client key, ``ssh -F`` config); every daemon
    it started stops at the end of the test module."""
    from tests.sshd_hosts import HostSpec, SshHosts, available, start_hosts

    why = available()
    if why:
        pytest.skip(why)
    started: list[SshHosts] = []

    def start(specs: list[HostSpec]) -> SshHosts:
        hosts = start_hosts(tmp_path_factory.mktemp("sshd"), specs)
        started.append(hosts)
        return hosts

    yield start
    for hosts in started:
        hosts.stop()
