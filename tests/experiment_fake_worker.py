"""A stand-in for the experiment worker (tests only; ``python -m``): the worker's protocol
(:mod:`cltui.replay.experiment.worker`) with no device, so that a test can end it where a
real driver rarely does on demand.  Each point is started and reported with an empty
passing result; with ``CLTUI_FAKE_ABORT_AFTER=ID`` set, the process aborts right after it
reported point ``ID`` (as a crash while that point's memory is freed)."""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path

from cltui.process.child import connect, exit_now, sender


def _child(job_path: str, fd: int) -> int:
    send = sender(connect(fd), threading.Lock())
    job = json.loads(Path(job_path).read_text())
    for point in job["points"]:
        send({"type": "point_start", "id": point["id"]})
        result = {"device": job["device"], "ok": True, "error": None, "failed_enqueue": None,
                  "repeat": 1, "steps": [], "builds": {}, "notes": []}  # fmt: skip
        send({"type": "point", "id": point["id"], "result": result, "times": []})
        if point["id"] == os.environ.get("CLTUI_FAKE_ABORT_AFTER"):
            os.abort()
    send({"type": "done"})
    return 0


if __name__ == "__main__":  # pragma: no cover - the child process
    exit_now(_child(sys.argv[1], int(sys.argv[2])))
