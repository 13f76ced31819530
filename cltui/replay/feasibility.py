"""Will a range run there?  The engine's pre-flight (:func:`cltui.replay.engine.check_feasible`)
on each device, each in a child process of its own (it builds programs: a driver that crashes
or hangs there must not take cltui down), for ``cltui feasible`` and the replay dialog.

Also what a bundle folder holds for it: its plan (``manifest.json``, include folders as
``-I``), its loader and the devices its ``replay.py`` would choose.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from cltui.errors import CltuiError
from cltui.process import lifecycle
from cltui.process.child import Child, connect, exit_now, sender
from cltui.progress import CancelToken
from cltui.replay.engine.base import add_bundle_includes
from cltui.replay.engine.schema import Device, Feasibility, Manifest
from cltui.replay.engine.verify import BundleRefused, verify_bundle

DEFAULT_TIMEOUT = 60.0  # seconds without progress (a build) before the check is a hang


class BundleError(CltuiError, ValueError):
    """A folder that is not a readable bundle."""


def is_bundle(path: str | Path) -> bool:
    """A folder holding ``manifest.json`` (an exported bundle), not a capture."""
    return (Path(path) / "manifest.json").is_file()


def load_bundle(path: str | Path) -> Manifest:
    """A bundle's plan once the bundle has verified itself (:func:`engine.verify_bundle`, as its
    replay.py does), its include folders made ``-I`` options (as its replay.py does)."""
    root = Path(path)
    try:
        plan: Manifest = verify_bundle(root)
    except BundleRefused as exc:
        raise BundleError(f"{root}: {exc}") from None
    add_bundle_includes(plan, root)
    return plan


def bundle_captured(plan: Manifest) -> list[Mapping[str, object] | str]:
    """The devices a bundle's plan names, most wanted first (the device rule's input, as
    the bundle's replay.py gathers it)."""
    cap = (plan.get("bundle") or {}).get("capture") or {}
    captured: list[Mapping[str, object] | str] = [cap["device"]] if cap.get("device") else []
    captured += [str(d) for s in plan.get("steps", []) if (d := s.get("device"))]
    return captured


def check(
    plan: Manifest,
    devices: Sequence[Device],
    data_root: str | Path,
    *,
    bundle: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
    cancel: CancelToken | None = None,
) -> list[Feasibility]:
    """The pre-flight of ``plan`` on each device (a child each); a crash, a hang or a cancel
    is that device's ``error``."""
    work = lifecycle.temp_dir("feasible")
    try:
        return [_one(plan, dev, str(data_root), bundle, timeout, cancel, work) for dev in devices]
    finally:
        lifecycle.remove(work)


def _one(
    plan: Manifest,
    dev: Device,
    root: str,
    bundle: bool,
    timeout: float,
    cancel: CancelToken | None,
    work: Path,
) -> Feasibility:
    tag = dev["id"].replace(":", "_")
    job = work / f"job_{tag}.json"
    job.write_text(json.dumps({"plan": plan, "data_root": root, "device": dev,
                               "bundle": bundle}))  # fmt: skip
    result: Feasibility | None = None
    building = "the check"
    try:
        child = Child("cltui.replay.feasibility", job, work / f"stderr_{tag}.txt")
    except OSError as exc:
        return _error(plan, dev, f"cannot start the check: {exc}")
    with child:
        for ev in child.events(timeout, cancel):
            if ev.get("type") == "build":
                building = f"the build of {ev.get('label')}"
            elif ev.get("type") == "result":
                result = cast(Feasibility, ev["result"])
        how, rc = child.status, child.finish()
    if result is not None:
        return result
    if how == "hang":
        return _error(plan, dev, f"{building} did not finish within {timeout:g} s")
    if how == "cancelled":
        return _error(plan, dev, "cancelled")
    cause, what = lifecycle.exit_cause(rc)
    tail = child.stderr_tail(300).splitlines()
    said = f": {tail[-1]}" if tail else ""
    verb = "crashed the driver" if cause == "fault" else "stopped"
    return _error(plan, dev, f"{building} {verb} ({what or 'no result'}){said}")


def _error(plan: Manifest, dev: Device, msg: str) -> Feasibility:
    n = len(plan.get("steps", []))
    return {"device": dev, "status": "error", "error": msg, "steps": n, "runnable": 0,
            "cannot_run": [], "at_launch": []}  # fmt: skip


def unchecked_line(plan: Manifest) -> str:
    """What of the range the pre-flight cannot judge: kernel enqueues the plan skips (no work
    sizes survived) and enqueues lost with the log (``""``: none)."""
    kernels = (plan.get("scope") or {}).get("kernels") or []
    skipped = sum(1 for k in kernels if not k.get("replayed"))
    lost = sum(int(x.get("count", 0)) for x in plan.get("lost") or [])
    parts = []
    if skipped:
        parts.append(f"{skipped} kernel enqueue{'s' if skipped != 1 else ''} skipped by the plan")
    if lost:
        parts.append(f"{lost} enqueue{'s' if lost != 1 else ''} lost with the log")
    return ", ".join(parts)


def overall(results: Sequence[Feasibility], plan: Manifest) -> tuple[str, str]:
    """The status of several devices' pre-flights (``ok`` only when every enqueue of the range
    was checked and can run on every device; ``incomplete`` when those checked can, but some of
    the range could not be checked; else ``cannot-run``, or ``error`` when a check failed) and
    one line."""
    if not results:
        return "error", "ERROR: no device to check"
    bad = [r for r in results if r["status"] != "ok"]
    n = results[0]["steps"]
    unchecked = unchecked_line(plan)
    at_launch = len({(r["device"]["id"], f["enqueue"]) for r in results
                     for f in r.get("at_launch", [])})  # fmt: skip
    decides = (f"; {at_launch} launch{'es' if at_launch > 1 else ''} over a kernel's "
               "CL_KERNEL_WORK_GROUP_SIZE: the driver decides when it runs them"
               if at_launch else "")  # fmt: skip
    if not bad:
        where = "1 device" if len(results) == 1 else f"{len(results)} devices"
        if unchecked:
            return "incomplete", (f"INCOMPLETE: the {n} kernel enqueues checked can run on "
                                  f"{where}; not checked: {unchecked}{decides}")  # fmt: skip
        return "ok", f"CAN RUN: all {n} kernel enqueues on {where}{decides}"
    status = "error" if any(r["status"] == "error" for r in bad) else "cannot-run"
    parts = []
    for r in bad:
        name = f"{r['device']['id']} {r['device']['name']}"
        if r["status"] == "error":
            parts.append(f"{name}: not checked: {r['error']}")
            continue
        first = r["cannot_run"][0]
        what = f"enqueue {first['enqueue']} {first['kernel']}: {first['reason']}"
        parts.append(f"{r['steps'] - r['runnable']}/{r['steps']} cannot run on {name} "
                     f"(first: {what})")  # fmt: skip
    if unchecked:
        parts.append(f"not checked: {unchecked}")
    return status, ("ERROR: " if status == "error" else "CANNOT RUN: ") + "; ".join(parts) + decides


# --------------------------------------------------------------------------- child side


def _child(job_path: str, fd: int) -> int:
    from cltui.replay import engine
    from cltui.replay.runner import capture_loader, default_binary_cache

    out = connect(fd)
    send = sender(out)

    job: dict[str, Any] = json.loads(Path(job_path).read_text())
    plan = job["plan"]
    root = job["data_root"]
    loader = engine.dir_loader(plan, root) if job.get("bundle") else capture_loader(plan, root)
    # the replay's binary cache: a check warms it for the replay that follows
    result = engine.check_feasible(plan, job["device"], loader, progress=send,
                                   binary_cache=default_binary_cache())  # fmt: skip
    send({"type": "result", "result": result})
    out.close()
    return 0


if __name__ == "__main__":  # pragma: no cover - the child process
    exit_now(_child(sys.argv[1], int(sys.argv[2])))
