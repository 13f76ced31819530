"""The app never blocks on reading: the capture is read (indexed, decoded) by a child process,
q / ctrl+q / ctrl+c quit at once whatever the reading is doing, the status line shows the
indexing progress, and esc stops a reading that is too slow.

The slow readers here are artificial and do not depend on how fast the index is: a reader
that holds its process's GIL in one C call after another (a backtracking regex) for a minute,
and a 16 GB call log that is one long NUL run (a sparse file) behind a real header.  The
bounds are hang checks, not speed figures: the reading would take a minute or more, the exit
must come within a second.
"""

from __future__ import annotations

import asyncio
import functools
import os
import re
import select
import signal
import subprocess
import sys
import termios
import time
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from cltui.capture import background
from cltui.capture.background import open_in_child
from cltui.capture.capture import Capture
from cltui.capture.opening import open_capture
from cltui.progress import CancelToken, ProgressEvent, ProgressFn
from cltui.tui.app import CltuiApp, make_app
from cltui.tui.screens.main import MainScreen
from tests.conftest import REPO, copy_capture
from tests.said import Said

pytestmark = pytest.mark.child  # every test starts a process (tests/tiers.py)

SIZE = (100, 30)
EXIT_BOUND_S = 10.0  # a hang detector: the reading would take >= 60 s (the exit is ~0.3 s)
_HOG_RE = re.compile(r"(a|a)*b")


def _hog() -> None:
    """Hold the GIL in one C call for a while (exponential backtracking, ~0.1 s)."""
    _HOG_RE.match("a" * 20)


def gil_hog_opener(path: Path, progress: ProgressFn | None, cancel: CancelToken | None) -> Capture:
    """A reader that holds its GIL for a minute, reporting progress between C calls."""
    deadline = time.monotonic() + 60
    step = 0
    while time.monotonic() < deadline:
        step += 1
        if progress is not None:
            progress(ProgressEvent(min(0.99, step / 100)))
        _hog()
    return open_capture(path, progress, cancel)


def hog_once_opener(
    marker: Path, path: Path, progress: ProgressFn | None, cancel: CancelToken | None
) -> Capture:
    """Slow the first time (``marker`` does not exist yet), then a plain open."""
    if not marker.exists():
        marker.write_text("read once")
        return gil_hog_opener(path, progress, cancel)
    return open_capture(path, progress, cancel)


def hog_app(path: Path) -> CltuiApp:
    return make_app(path, opener=functools.partial(open_in_child, opener=gil_hog_opener))


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def group_alive(pgid: int) -> list[int]:
    """Running processes of process group ``pgid``."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            out.append(int(entry))
    return out


def wait_gone(pids: list[int], timeout: float = 2.0) -> list[int]:
    deadline = time.monotonic() + timeout
    left = pids
    while left and time.monotonic() < deadline:
        left = [p for p in pids if alive(p) or group_alive(p)]
        time.sleep(0.02)
    return left


async def wait_status(pilot: Pilot[Any], pattern: str, timeout: float = 30.0) -> re.Match[str]:
    app = pilot.app
    assert isinstance(app, CltuiApp)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        screen = app.main
        if screen.is_mounted:
            m = re.search(pattern, screen.state()["status"])
            if m:
                return m
        await pilot.pause(0.02)
    raise AssertionError(f"status never matched {pattern!r}: {app.main.state()['status']!r}")


def quit_while_reading(
    app: CltuiApp, key: str, status: str, busy: float = 0.0
) -> tuple[float, list[int], Any]:
    """Start ``app``, wait for ``status`` (a regex) in the status line and a reader process,
    let it work ``busy`` seconds, press ``key``; the seconds from the key to the end of
    ``asyncio.run`` (threads included), the reader pids."""
    marks: dict[str, Any] = {}

    async def go() -> None:
        async with app.run_test(size=SIZE) as pilot:
            marks["match"] = await wait_status(pilot, status)
            for _ in range(1000):
                marks["pids"] = [r.pid for r in list(background._live)]
                if marks["pids"]:
                    break
                await pilot.pause(0.01)
            await pilot.pause(busy)
            marks["loaded"] = app.main.capture is not None
            marks["t0"] = time.monotonic()
            await pilot.press(key)
            for _ in range(200):
                if app._exit:
                    break
                await pilot.pause(0.005)

    asyncio.run(go())
    return time.monotonic() - marks["t0"], marks["pids"], marks


@pytest.fixture
def small(images_svm: Path, tmp_path: Path) -> Path:
    return copy_capture(images_svm, tmp_path)


@pytest.fixture
def nul_log_capture(images_svm: Path, tmp_path: Path) -> Path:
    """images_svm_pocl whose log goes on with 16 GB of NULs (sparse: no disk used), a
    newline before every 16 MB boundary: a damaged log far too large to index quickly."""
    cap = copy_capture(images_svm, tmp_path)
    log = cap / "clintercept_log.txt"
    size = 16 << 30
    step = 16 << 20
    with log.open("r+b") as f:
        f.seek(0, 2)
        start = f.tell()
        for at in range(step - 1, size, step):
            if at > start:
                f.seek(at)
                f.write(b"\n")
        f.truncate(size)
    return cap


# ----------------------------------------------------------------------------------- quitting


@pytest.mark.parametrize("key", ["q", "ctrl+c", "ctrl+q"])
def test_quit_while_a_slow_reader_holds_its_gil(small: Path, key: str) -> None:
    app = hog_app(small)
    elapsed, pids, marks = quit_while_reading(app, key, r"indexing [1-9]\d*%")
    assert not marks["loaded"]
    assert elapsed < EXIT_BOUND_S, f"{key}: exit took {elapsed:.2f} s"
    assert pids and not wait_gone(pids), "the reader process outlived the app"


def test_quit_while_indexing_a_huge_damaged_log(nul_log_capture: Path) -> None:
    """The real reader (open_capture and its index workers) on a 16 GB log."""
    app = make_app(nul_log_capture)
    elapsed, pids, marks = quit_while_reading(app, "q", r"indexing \d+% of 16\.0 GiB", busy=1.0)
    assert not marks["loaded"]
    assert elapsed < EXIT_BOUND_S, f"exit took {elapsed:.2f} s"
    # the reader and the index's worker processes (its process group) are gone
    assert pids and not wait_gone(pids), "reader or index workers outlived the app"


def test_quit_while_decoding_a_slow_enqueue(
    small: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reader process decodes; one that holds its GIL for a minute does not hold q."""
    parent = os.getpid()
    real = Capture.enqueue

    def slow_enqueue(self: Capture, number: int) -> Any:
        if os.getpid() != parent:  # in the reader process only
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                _hog()
        return real(self, number)

    monkeypatch.setattr(Capture, "enqueue", slow_enqueue)
    app = make_app(small)
    marks: dict[str, Any] = {}

    async def go() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_status(pilot, r"^r: enqueue 0 · 1 enq")  # loaded; the decode of 0 is running
            screen = app.main
            await pilot.press("down")  # the list still answers while the reader decodes
            await pilot.pause(0.05)
            assert screen.state()["cursor"] == 1
            assert screen.details.enqueue is None
            marks["pids"] = [r.pid for r in list(background._live)]
            marks["t0"] = time.monotonic()
            await pilot.press("q")

    asyncio.run(go())
    elapsed = time.monotonic() - marks["t0"]
    assert elapsed < EXIT_BOUND_S, f"exit took {elapsed:.2f} s"
    assert marks["pids"] and not wait_gone(marks["pids"])


# ------------------------------------------------------------------------- progress and stop


def test_status_line_shows_indexing_progress(small: Path) -> None:
    app = hog_app(small)

    async def go() -> list[int]:
        seen: list[int] = []
        async with app.run_test(size=SIZE) as pilot:
            pattern = r"indexing (\d+)% of [\d.]+ [KM]iB · esc stops"
            deadline = time.monotonic() + 30
            while len(set(seen)) < 3 and time.monotonic() < deadline:
                m = await wait_status(pilot, pattern)
                seen.append(int(m.group(1)))
                await pilot.pause(0.05)
            screen = app.main
            assert screen.reading and screen.capture is None
            assert "Stop reading" in str(screen.active_bindings.get("escape").binding.description)
        return seen

    seen = asyncio.run(go())
    assert seen == sorted(seen) and seen[-1] > seen[0] >= 0


def test_esc_stops_the_reading_and_R_reads_again(small: Path, tmp_path: Path) -> None:
    marker = tmp_path / "read-once"
    opener = functools.partial(
        open_in_child, opener=functools.partial(hog_once_opener, marker)
    )
    app = make_app(small, opener=opener)

    async def go() -> None:
        said = Said()
        async with app.run_test(size=SIZE, message_hook=said) as pilot:
            await wait_status(pilot, r"indexing [1-9]\d*%")
            pids = [r.pid for r in list(background._live)]
            screen: MainScreen = app.main
            await pilot.press("escape")
            await pilot.pause(0.05)
            state = screen.state()
            assert re.match(r"reading stopped at \d+% · R reads again", state["status"])
            assert "Reading stopped at" in screen.enqueue_list.placeholder
            assert not screen.reading and screen.stopped and screen.capture is None
            assert any("Stopped reading" in t for t in said.texts)
            assert pids and not wait_gone(pids), "esc left the reader running"
            assert not screen.query_one("#loading").display
            # escape is the list's again (no reading to stop); R reads again
            await pilot.press("R")
            await wait_status(pilot, r"^r: enqueue 0 · 1 enq", timeout=60)
            assert screen.capture is not None and screen.state()["rows"] == len(screen.capture)
            assert not screen.stopped

    asyncio.run(go())


# ------------------------------------------------------------------------------- a real tty


def _proc_with(text: str) -> list[int]:
    """Pids of running processes whose command line mentions ``text``."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if text.encode() in cmd and alive(int(entry)):
            out.append(int(entry))
    return out


def test_q_in_a_real_terminal_while_indexing(nul_log_capture: Path) -> None:
    """``python -m cltui DUMPDIR`` in a pty: q during the indexing of a 16 GB log ends the
    process at once, the terminal is back in cooked mode and no reader process is left."""
    import fcntl
    import struct

    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    before = termios.tcgetattr(slave)
    env = {**os.environ, "TERM": "xterm-256color", "PYTHONPATH": str(REPO), "COLUMNS": "100"}
    env.pop("TEXTUAL", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "cltui", str(nul_log_capture)],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        start_new_session=True,
        cwd=REPO,
    )
    output = bytearray()

    def drain(seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.02)
            if ready:
                try:
                    output.extend(os.read(master, 1 << 16))
                except OSError:
                    return
            elif proc.poll() is not None:
                return

    try:
        deadline = time.monotonic() + 60
        while b"indexing" not in output and time.monotonic() < deadline:
            drain(0.1)
            assert proc.poll() is None, output.decode(errors="replace")[-2000:]
        assert b"indexing" in output, output.decode(errors="replace")[-2000:]
        drain(0.5)  # the index workers are at work
        assert proc.poll() is None
        os.write(master, b"q")
        t0 = time.monotonic()
        while proc.poll() is None and time.monotonic() - t0 < 10:
            drain(0.02)
        elapsed = time.monotonic() - t0
        print(f"python -m cltui exited {elapsed:.3f} s after q")  # shown with -s
        assert proc.returncode == 0, output.decode(errors="replace")[-2000:]
        assert elapsed < 2 * EXIT_BOUND_S, f"the process took {elapsed:.2f} s to exit"
        drain(0.1)
        after = termios.tcgetattr(slave)
        assert after[3] & termios.ICANON and after[3] & termios.ECHO  # cooked mode again
        assert after[3] == before[3]
        assert b"\x1b[?1049l" in output  # left the alternate screen
        assert b"Traceback" not in output
        assert not wait_gone(_proc_with(str(nul_log_capture))), "a reader process was left"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        for pid in _proc_with(str(nul_log_capture)):
            os.kill(pid, signal.SIGKILL)
        os.close(master)
        os.close(slave)
