"""One registry of the scratch folders cltui makes (lifecycle.KINDS): a process that made one
of each kind and was SIGKILLed leaves them; the next cltui start sweeps them all; no folder
is made outside the registry; the README lists every kind."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from cltui.process import lifecycle

REPO = Path(__file__).resolve().parent.parent

_MAKER = """
import sys, time
from cltui.process import lifecycle
cache = lifecycle.cache_folder()
for kind in lifecycle.KINDS:
    sub = lifecycle.IN_CACHE.get(kind)
    parent = None
    if sub:
        parent = cache / sub
        parent.mkdir(parents=True, exist_ok=True)
    d = lifecycle.temp_dir(kind, parent=parent)
    (d / "payload.bin").write_bytes(b"x" * 65536)
    print(d, flush=True)
print("ready", flush=True)
time.sleep(600)
"""


def _env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(tmp_path / "tmp"),
            "XDG_CACHE_HOME": str(tmp_path / "cache"), "CLTUI_CACHE_DIR": str(tmp_path / "cc")}


@pytest.mark.child
@pytest.mark.slow
def test_every_kind_a_killed_process_left_is_swept_on_the_next_start(
    tmp_path: Path, pyocl_pocl: Path
) -> None:
    env = _env(tmp_path)
    maker = subprocess.Popen([sys.executable, "-c", _MAKER], env=env, stdout=subprocess.PIPE,
                             text=True)
    made: list[Path] = []
    try:
        assert maker.stdout is not None
        for line in maker.stdout:
            if line.strip() == "ready":
                break
            made.append(Path(line.strip()))
    finally:
        maker.send_signal(signal.SIGKILL)
        maker.wait()
    names = {re.sub(r"-p\d+-.*", "", p.name) for p in made}
    assert names == {f"cltui-{k}" for k in lifecycle.KINDS}
    assert all(p.is_dir() for p in made)  # SIGKILL: no atexit, nothing removed
    # a live owner's folder of the same kinds is kept
    keeper = subprocess.Popen([sys.executable, "-c", _MAKER], env=env, stdout=subprocess.PIPE,
                              text=True)
    kept: list[Path] = []
    try:
        assert keeper.stdout is not None
        for line in keeper.stdout:
            if line.strip() == "ready":
                break
            kept.append(Path(line.strip()))
        nxt = subprocess.run([sys.executable, "-m", "cltui", "info", str(pyocl_pocl)], env=env,
                             capture_output=True, text=True, timeout=120)
        assert nxt.returncode == 0, nxt.stderr[-2000:]
        assert [p for p in made if os.path.lexists(p)] == []
        assert all(p.is_dir() for p in kept)
    finally:
        keeper.send_signal(signal.SIGKILL)
        keeper.wait()
    assert lifecycle.sweep(tmp_path / "tmp") != []  # the test leaves nothing behind
    lifecycle.sweep(tmp_path / "cache" / "cltui" / "fleet-lister")


_MADE = re.compile(r"""lifecycle\.(?:temp_dir|scratch)\(\s*["']([^"']+)["']""")


def test_every_scratch_folder_cltui_makes_is_a_registered_kind() -> None:
    used: set[str] = set()
    for path in (REPO / "cltui").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        used |= set(_MADE.findall(text))
        if path.name != "lifecycle.py":
            for call in ("TemporaryDirectory(", "mkdtemp("):
                # export's .old folder beside a replaced bundle: noted, swept as staging
                if call in text and not (path.name == "bundle.py" and "note_staging" in text):
                    raise AssertionError(f"{path}: {call} outside lifecycle")
    assert used and used <= set(lifecycle.KINDS), used - set(lifecycle.KINDS)
    with pytest.raises(ValueError, match="unknown scratch folder kind"):
        lifecycle.temp_dir("nope")


def test_the_readme_lists_every_kind() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("### What cltui may leave where", 1)[1].split("\n## ", 1)[0]
    for kind in lifecycle.KINDS:
        assert f"cltui-{kind}-p" in section, kind
    for remote in ("out.", "incoming.", "builds/.tmp."):
        assert remote in section
