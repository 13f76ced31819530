#!/usr/bin/env python3
"""Replay the captured OpenCL enqueues of this bundle (needs numpy and pyopencl, nothing else).

``lib/cltui/replay/engine/`` beside this file is cltui's own replay engine (with the three
small modules of cltui it imports), copied unchanged; this file only reads ``manifest.json``,
picks the devices and prints the results.

    python replay.py --list-devices
    python replay.py --validate                 # exit 0 PASS, 1 FAIL, 3 INCOMPLETE
                                                # (no --device: the capture's own device, else
                                                # the one named most like it, else the first
                                                # that is not a simulator; stderr says which)
    python replay.py --device pocl --repeat 20  # stage timing: min / median / max
    python replay.py --json --out replayed/     # machine-readable results, replayed outputs

Every device result carries a verdict (the engine's, as cltui's): PASS when every kernel
enqueue was replayed and every output checked and equal or within tolerance.  Before the
first step the engine's pre-flight says which enqueues cannot run on the device and why
(local size over its limits, fp64, images, image formats, allocations, local memory, the
OpenCL C version, ...): those are not launched, the JSON's ``cannot_run`` lists them and
the verdict is INCOMPLETE.
Before anything runs, the bundle verifies itself: ``manifest.json`` against the engine's
``manifest.schema.json``, every path it names inside the bundle (no absolute path, no ``..``,
no link), every data file's size and sha256 against the manifest and ``SHA256SUMS``; the first
problem is one line ("bundle damaged: data/... sha256 mismatch", "bad manifest: steps:
expected an array, got a string") and exit 2, and nothing runs.
Exit codes: 0 PASS, 1 FAIL (a check differs, with --validate) or a device could not run
the bundle (its message says why), 2 bad usage or a damaged or bad bundle, 3 INCOMPLETE
(with --validate: nothing failed, but something was skipped, unchecked or not replayed).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import cast

HERE = Path(__file__).resolve().parent
# no BLAS call here: numpy's OpenBLAS threads would only spin beside the kernels being timed
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(HERE / "lib"))  # first: the bundle's cltui, whatever else is installed

try:
    from cltui.replay import engine
    from cltui.replay.engine.schema import (
        Device,
        DeviceChoice,
        DeviceResult,
        EngineResult,
        Manifest,
        Stats,
        ToleranceSpec,
    )
    from cltui.text.units import fmt_ns
except ImportError as _exc:  # numpy missing
    print(f"replay: {_exc.name or _exc} is needed: pip install numpy pyopencl", file=sys.stderr)
    sys.exit(2)

EXIT_OK, EXIT_MISMATCH, EXIT_USAGE, EXIT_DEVICE = 0, 1, 2, 1


def load_manifest(root: Path) -> Manifest:
    """The plan, once the bundle has verified itself (engine.verify_bundle: the manifest
    against manifest.schema.json, every path inside the bundle, every data file's size and
    sha256), with each program's bundled include folders turned into ``-I`` options
    (engine.add_bundle_includes)."""
    plan = engine.verify_bundle(root)
    engine.add_bundle_includes(plan, root)
    return plan


def default_device(plan: Manifest) -> tuple[list[Device], dict[str, str]]:
    """Without --device: the device that made the capture (the manifest's
    ``bundle.capture.device``, then the steps' devices) where it is here, else the one named
    most like it, else the first that is not a simulator, else the first; and why."""
    cap = (plan.get("bundle") or {}).get("capture") or {}
    captured: list[Mapping[str, object] | str] = [cap["device"]] if cap.get("device") else []
    captured += [d for s in plan.get("steps", []) if (d := s.get("device"))]
    dev, choice = engine.choose_device(engine.list_devices(), captured)
    if dev is None:
        raise engine.EngineError("no OpenCL device found (is an ICD installed?)")
    return [dev], choice


def print_result(res: DeviceResult) -> None:
    dev = res["device"]
    print(f"== {dev['id']} {dev['name']} ({dev['platform']})")
    print(f"   {res['verdict']['line']}")
    for st in res.get("steps", []):
        for tr in st.get("transfers", []):
            if not tr.get("replayed"):
                print(
                    f"   host transfer {tr['enqueue']} {tr['function']} before enqueue "
                    f"{st['enqueue']}: not replayed ({tr['why']})"
                )
    for note in res.get("notes", []):
        print(f"   note: {note}")
    for found in res.get("cannot_run", []):
        print(f"   enqueue {found['enqueue']} {found['kernel']}: cannot run ({found['kind']}): "
              f"{found['reason']}")  # fmt: skip
    if res.get("error"):
        print(f"   ERROR: {res['error']}")
        return
    for st in res["steps"]:
        if st["status"] == "cannot-run":
            print(f"   enqueue {st['enqueue']} {st['kernel']}: CANNOT RUN (not launched)")
            continue
        t = st["timing"]
        kern = t["start_to_end"]
        line = f"   enqueue {st['enqueue']} {st['kernel']}: {st['status'].upper()}"
        line += f"  (kernel {fmt_ns(_median(kern), '-')}"
        if res.get("repeat", 1) > 1:
            q = _median(t["queued_to_submit"])
            s = _median(t["submit_to_start"])
            h = _median(t["host_enqueue"])
            lo, hi = (kern["min"], kern["max"]) if kern else (None, None)
            line += (
                f" [{fmt_ns(lo, '-')} .. {fmt_ns(hi, '-')}],"
                f" queued->submit {fmt_ns(q, '-')}, submit->start {fmt_ns(s, '-')},"
                f" host enqueue {fmt_ns(h, '-')}"
            )
        print(line + ")")
        for ld in st["loads"]:
            if ld["why"] == "reload" or (ld["why"] == "verify" and ld.get("done")):
                print(f"      reload {ld['mem']}: {ld['note']}")
        for c in st["prechecks"]:
            print(f"      before: {c['label']}: {c['status']} {c.get('summary', '')}")
        for c in st["checks"]:
            print(f"      {c['label']}: {c['status']} {c.get('summary', '')}")
    print(res["verdict"]["line"])


def _median(stats: Stats | None) -> float | None:
    return stats["median"] if stats else None


def _progress(trace: bool, stream: bool) -> Callable[[Mapping[str, object]], None] | None:
    """The engine's events on stderr: ``--trace`` each enqueue before it runs, ``--stream``
    each finished step as one JSON line (a crash or a hang later keeps it)."""
    if not (trace or stream):
        return None

    def show(event: Mapping[str, object]) -> None:
        if trace and event.get("type") == "step":
            print(
                f"replay: enqueue {event['enqueue']} ({int(str(event['i'])) + 1}/{event['n']})",
                file=sys.stderr,
                flush=True,
            )
        elif stream and event.get("type") == "step_done":
            print(f"replay: step {json.dumps(event['step'])}", file=sys.stderr, flush=True)

    return show


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description="Replay the captured enqueues of this bundle.")
    ap.add_argument("--list-devices", action="store_true", help="list OpenCL devices and exit")
    ap.add_argument(
        "--device",
        action="append",
        default=[],
        help="P:D or a case-insensitive name substring (repeatable; default: the capture's "
        "device, else the one named most like it, else the first that is not a simulator)",
    )
    ap.add_argument(
        "--validate",
        action="store_true",
        help="exit with the verdict: 0 PASS, 1 FAIL, 3 INCOMPLETE",
    )
    ap.add_argument("--repeat", type=int, default=1, help="runs, for stage timing")
    ap.add_argument("--json", action="store_true", help="print results as JSON")
    ap.add_argument("--out", metavar="DIR", help="write the replayed outputs into DIR")
    ap.add_argument("--atol", type=float, help="absolute tolerance (floating point)")
    ap.add_argument("--rtol", type=float, help="relative tolerance (floating point)")
    ap.add_argument("--ulp", type=int, help="tolerance in units in the last place")
    ap.add_argument(
        "--trace",
        action="store_true",
        help="print each enqueue on stderr before it runs (which one crashed?)",
    )
    ap.add_argument(
        "--stream",
        action="store_true",
        help="print each finished step on stderr as one JSON line (replay: step ...)",
    )
    return ap


def run_devices(
    args: argparse.Namespace, plan: Manifest, root: Path, devices: list[Device]
) -> list[EngineResult]:
    """The plan on each device, with the options' tolerance, output folder and trace."""
    tol: ToleranceSpec = {}
    if args.atol is not None:
        tol["atol"] = args.atol
    if args.rtol is not None:
        tol["rtol"] = args.rtol
    if args.ulp is not None:
        tol["ulp"] = args.ulp
    loader = engine.dir_loader(plan, root)
    results = []
    for dev in devices:
        save = None
        if args.out:
            save = Path(args.out) / dev["id"].replace(":", "_") if len(devices) > 1 else args.out
        results.append(
            engine.run_plan(
                plan,
                dev,
                loader,
                repeat=args.repeat,
                tolerance=tol,
                save_dir=save,
                progress=_progress(args.trace, args.stream),
            )
        )
    return results


def device_result(plan: Manifest, res: EngineResult, choice: dict[str, str]) -> DeviceResult:
    """The engine's result completed, in place, into the device result of docs/cli-json.md."""
    out = cast(DeviceResult, res)  # the keys the engine does not set follow
    out["runner"] = "replay.py"
    out["status"] = "error" if res.get("error") else ("ok" if res["ok"] else "mismatch")
    out["device_choice"] = cast(DeviceChoice, choice)
    out.setdefault("loop", None)
    out["verdict"] = engine.verdict(plan, out)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = _parser()
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    try:
        import pyopencl  # noqa: F401  (the engine imports it lazily: say it early)
    except ImportError:
        print("replay: pyopencl is needed: pip install pyopencl", file=sys.stderr)
        return EXIT_USAGE
    try:
        if args.list_devices:
            for d in engine.list_devices():
                print(f"{d['id']}  {d['name']}  ({d['platform']}, {d['version']})"
                      f"  driver {d.get('driver', '')}")
            return EXIT_OK
        plan = load_manifest(HERE)
        if args.device:
            devices, choice = engine.resolve_devices(args.device), engine.user_choice(args.device)
        else:
            devices, choice = default_device(plan)
    except (OSError, ValueError, engine.EngineError) as exc:
        print(f"replay: {exc}", file=sys.stderr)
        return EXIT_USAGE
    print(f"replay: device: {engine.choice_line(devices, choice)}", file=sys.stderr)
    results = [device_result(plan, r, choice) for r in run_devices(args, plan, HERE, devices)]
    overall = engine.combine_verdicts(
        [res["verdict"] for res in results], [res["device"]["id"] for res in results]
    )
    if args.json:
        print(json.dumps(results, indent=1))
    else:
        if len(results) > 1:
            print(overall["line"])
        for res in results:
            print_result(res)
    for res in results:
        if res.get("error"):
            print(f"replay: {res['device']['name']}: {res['error']}", file=sys.stderr)
    if any(res.get("error") for res in results):
        return EXIT_DEVICE
    if args.validate:
        return int(engine.verdict_exit(overall["status"]))
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
