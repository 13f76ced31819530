"""What the engine reads in a plan, as one canonical JSON object: the values the engine acts
on, each with the default the engine gives a key that is not there (a label is its memory id,
a load's reason ``input``, a check's tolerance the plan's with its own keys over it, an image's
size its width x height x depth x element size, ...).

replay.cpp reads the same manifest with its own reader (``cpp/plan.hpp``); ``replay.cpp
--plan-cases FILE`` prints its reading of each plan the same way, and
``tests/test_plan_reading.py`` holds the two to each other over the hand-written edge cases
of ``tests/fixtures/plan_cases.json`` and plans built from real captures.  Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from .base import _replays
from .compare import Tolerance
from .schema import Manifest, TransferSpec
from .verdicts import scope_counts

__all__ = ["plan_reading"]

_PREFIXES = ("CL_MEM_OBJECT_", "CL_ADDRESS_", "CL_FILTER_", "CL_")


def _bare(name: object) -> str:
    """An OpenCL enum name without its prefix (``CL_RGBA`` -> ``RGBA``); a number as text."""
    if not isinstance(name, str):
        return str(name)
    for prefix in _PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


def _tol(t: Tolerance) -> dict[str, float | int]:
    return {"atol": t.atol, "rtol": t.rtol, "ulp": t.ulp}


def _sizes(v: object) -> list[int]:
    return [int(x) for x in v] if isinstance(v, list) else []


def _memory(mid: str, info: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "kind": info["kind"], "size": int(info.get("size") or 0),
        "label": info.get("label", mid), "parent": info.get("parent", ""),
        "origin": int(info.get("origin", 0)),
    }  # fmt: skip
    im = info.get("image")
    if info["kind"] == "image" and isinstance(im, Mapping):
        w, h, d = (int(x) for x in im["shape"])
        es = int(im["element_size"])
        out["size"] = w * h * d * es  # what the engine makes (memory.DeviceMemory.create)
        out["image"] = {
            "order": _bare(im["order"]), "type": _bare(im["type"]),
            "image_type": _bare(im.get("image_type", "CL_MEM_OBJECT_IMAGE2D")),
            "region": [w, h, d], "element_size": es,
        }  # fmt: skip
    return out


def _arg(a: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "index": int(a["index"]), "kind": a["kind"], "mem": a.get("mem", ""),
        "offset": int(a.get("offset", 0)), "size": int(a.get("size", 0)),
        "hex": bytes.fromhex(a.get("hex", "")).hex(),  # the bytes set (any case of hex)
    }  # fmt: skip
    if a["kind"] == "sampler":  # (its modes: enum values in C++, names here; not compared)
        out["normalized"] = bool(a["normalized"])
    return out


def _checks(checks: object, base: Tolerance) -> list[dict[str, Any]]:
    out = []
    for c in cast(list[Mapping[str, Any]], checks or []):
        at = c.get("after_unreplayed")
        out.append({
            "mem": c["mem"], "label": c.get("label", c["mem"]), "data": c.get("data") or "",
            "hash64": c.get("hash64") or "", "args": [int(x) for x in c.get("args", [])],
            "shape": _sizes(c.get("shape")), "tol": _tol(base.merged(c.get("tol"))),
            "after_unreplayed": int(at) if isinstance(at, int) else None,
        })  # fmt: skip
    return out


def _transfer(t: TransferSpec) -> dict[str, Any]:
    op = cast(Mapping[str, Any], t.get("op") or {})
    return {
        "enqueue": int(t["enqueue"]), "mem": t.get("mem", ""), "runs": _replays(t),
        "op": op.get("op", ""), "src": op.get("src", ""),
        "offset": int(op.get("offset") or 0), "size": int(op.get("size") or 0),
        "pattern": bytes.fromhex(op.get("pattern", "")).hex(),
    }  # fmt: skip


def _program(pid: str, p: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "label": p.get("label", pid), "source": p.get("source") or "", "il": p.get("il") or "",
        "options": p.get("options") or "",
        "binaries": [[b.get("data", ""), b.get("device", "")] for b in p.get("binaries", [])],
        "include_dirs": list(p.get("include_dirs", [])),
    }  # fmt: skip


def plan_reading(plan: Manifest | Mapping[str, Any]) -> dict[str, Any]:
    """The canonical reading of ``plan`` (see the module doc)."""
    m = cast(Mapping[str, Any], plan)
    tol = Tolerance.from_dict(m.get("tolerance"))
    steps = []
    for s in m["steps"]:
        steps.append({
            "enqueue": int(s["enqueue"]), "kernel": s["kernel"], "program": s.get("program", ""),
            "global": _sizes(s.get("global")), "local": _sizes(s.get("local")),
            "offset": _sizes(s.get("offset")), "args": [_arg(a) for a in s["args"]],
            "loads": [{"mem": ld["mem"], "data": ld["data"], "why": ld.get("why", "input")}
                      for ld in s.get("loads", [])],
            "prechecks": _checks(s.get("prechecks"), tol), "checks": _checks(s.get("checks"), tol),
            "transfers": [_transfer(t) for t in s.get("transfers", [])],
        })  # fmt: skip
    return {
        "tolerance": _tol(tol),
        "data": {k: v["path"] for k, v in m["data"].items()},
        "memory": {mid: _memory(mid, info) for mid, info in m["memory"].items()},
        "programs": {pid: _program(pid, p) for pid, p in m["programs"].items()},
        "steps": steps,
        "counts": scope_counts(m),
    }
