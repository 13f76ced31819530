"""The experiment processes a test starts (``cltui.replay.experiment.worker``), counted."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest


def count_workers(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The experiment processes started from now on (each one's Popen)."""
    from cltui.process import child

    started: list[Any] = []
    real = subprocess.Popen

    def popen(args: Any, *a: Any, **kw: Any) -> Any:
        proc = real(args, *a, **kw)
        if "cltui.replay.experiment.worker" in args:
            started.append(proc)
        return proc

    monkeypatch.setattr(child.subprocess, "Popen", popen)
    return started
