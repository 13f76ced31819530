"""Shared fixtures: the real captures in ../shared/captures (read-only)."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest_plugins = ["tests.tiers"]  # the fast/full tiers and the process guard

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


RUN_CACHE_VARS = ("XDG_CACHE_HOME", "POCL_CACHE_DIR")


@pytest.fixture(scope="session", autouse=True)
def _run_cache(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Iterator[None]:
    """One cache folder for the whole run, never the user's ``~/.cache``: cltui's caches
    (program binaries, the C++ runner's build), pyopencl's and PoCL's compiled kernels.  The
    xdist workers share it (a run compiles each kernel once), and so do the sshd hosts
    (``POCL_CACHE_DIR``, tests/sshd_hosts.py): each host farm's own ``HOME`` used to compile
    every kernel again with LLVM (pyopencl_lib's programs: about 20 CPU s cold, 3 warm)."""
    base = tmp_path_factory.getbasetemp()
    if worker_id != "master":
        base = base.parent  # shared by the workers of one run
    cache = base / "run-cache"
    (cache / "pocl").mkdir(parents=True, exist_ok=True)
    saved = {k: os.environ.get(k) for k in RUN_CACHE_VARS}
    os.environ.update(XDG_CACHE_HOME=str(cache), POCL_CACHE_DIR=str(cache / "pocl"))
    yield
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


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
def planted() -> Path:
    """Six planted kernels with known causes of a PoCL/Oclgrind difference (its README)."""
    return capture_path("planted_divergence_pocl")


@pytest.fixture(scope="session")
def heat2d(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """The 204,011-enqueue capture (430 MB), unpacked once per test session into a temp dir
    (pytest-xdist workers share it through a lock in the common temp folder)."""
    archive = CAPTURES / "heat2d_large" / "heat2d_large.tar.zst"
    if not archive.is_file():
        pytest.skip("heat2d_large archive not found")
    cached = os.environ.get("CLTUI_HEAT2D_DIR")
    if cached and (Path(cached) / "clintercept_log.txt").is_file():
        return Path(cached)
    if shutil.which("zstd") is None:
        pytest.skip("zstd is not installed")
    base = tmp_path_factory.getbasetemp()
    if worker_id != "master":
        base = base.parent  # shared by the workers of one run
    shared = base / "cltui-heat2d"
    shared.mkdir(exist_ok=True)
    done = shared / "unpacked"
    with (shared / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.is_file():
            shutil.rmtree(shared / "heat2d_large", ignore_errors=True)
            subprocess.run(["tar", "--zstd", "-xf", str(archive), "-C", str(shared)], check=True)
            done.touch()
    return shared / "heat2d_large"


def copy_capture(src: Path, dest: Path) -> Path:
    """A writable copy of a capture (for tests that break it on purpose)."""
    out = dest / src.name
    shutil.copytree(src, out)
    for p in [out, *out.rglob("*")]:
        p.chmod(p.stat().st_mode | 0o200)
    return out


def rename_device(capture: Path, old: str, new: str) -> None:
    """Rewrite a (copied) capture's log as if its device had been named ``new``.

    The shared PoCL captures were made on an AMD EPYC with AVX-512, and PoCL names its device
    after the CPU's target and name (``pthread-skylake-avx512-AMD EPYC``); a machine running
    the tests may be another CPU (``pthread-haswell-AMD EPYC``). A test that needs "the device
    that made the capture" renames it after this machine's PoCL device (:func:`pocl_here`);
    one that also needs the capture's binaries to load rebuilds them here
    (:func:`binaries_made_here`).
    """
    for log in capture.glob("clintercept_*.txt"):
        log.write_bytes(log.read_bytes().replace(old.encode(), new.encode()))


CAPTURED_POCL = "pthread-skylake-avx512-AMD EPYC"  # the device of the shared PoCL captures
_pocl_here: list[str | None] = []


def pocl_here() -> str:
    """This machine's PoCL CPU device name (skips the test where PoCL is missing)."""
    if not _pocl_here:
        try:
            import pyopencl as cl

            plat = [p for p in cl.get_platforms() if "portable computing" in p.name.lower()]
            _pocl_here.append(str(plat[0].get_devices()[0].name).strip() if plat else None)
        except Exception:
            _pocl_here.append(None)
    name = _pocl_here[0]
    if name is None:
        pytest.skip("no PoCL device")
    return name


def named_like_here(last: str = "Elsewhere 9") -> tuple[str, int]:
    """A made-up PoCL device named like this machine's (its ``pthread-<target>`` words kept,
    the CPU's name replaced by ``last``) and how many leading words the two share."""
    prefix = pocl_here().rsplit("-", 1)[0]
    return f"{prefix}-{last}", len(prefix.split("-"))


LIKE_HERE = "<named like this machine's PoCL>"  # a test parameter: see made_on


def made_on(capture: Path, dest: Path, device: str | None) -> Path:
    """A copy of a shared PoCL capture as if made on ``device``: None is this machine's PoCL
    device, :data:`LIKE_HERE` one named like it (:func:`named_like_here`)."""
    name = pocl_here() if device is None else (
        named_like_here()[0] if device == LIKE_HERE else device)
    out = copy_capture(capture, dest)
    rename_device(out, CAPTURED_POCL, name)
    return out


def binaries_made_here(capture: Path) -> None:
    """Replace a copied capture's ``Replay/*/DeviceBinary*.bin`` by binaries of the same
    kernel source and options built on this machine's PoCL device, which loads them (the
    captured ones hold the capturing CPU's code: AVX-512 does not load on a Haswell)."""
    import pyopencl as cl

    pocl_here()
    plat = next(p for p in cl.get_platforms() if "portable computing" in p.name.lower())
    ctx = cl.Context([plat.get_devices()[0]])
    for folder in sorted(capture.glob("Replay/*/")):
        bins = sorted(folder.glob("DeviceBinary*.bin"))
        if not bins:
            continue
        source = (folder / "kernel.cl").read_text()
        opts = (folder / "buildOptions.txt").read_text().split()
        keep = [o for i, o in enumerate(opts) if o != "-I" and (i == 0 or opts[i - 1] != "-I")]
        built = cl.Program(ctx, source).build(options=keep)
        (binary,) = built.get_info(cl.program_info.BINARIES)
        for b in bins:
            b.write_bytes(bytes(binary))


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
