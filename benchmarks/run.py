"""Run every cltui benchmark on this machine and rewrite BENCHMARKS.md.

    .venv/bin/python benchmarks/run.py [--quick] [--sections index,tui,replay,compare,export,
                                       pathological,sources] [--device pocl] [--no-write]
                                       [--json-out PATH]
    .venv/bin/python benchmarks/run.py --only pathological   (one section, spliced into
                                       BENCHMARKS.md: the other sections stay as they are)

Every figure is measured next to its baseline in the same run (the two taking turns; best
of N or medians), and BENCHMARKS.md shows it as a ratio against that baseline, with the
goal of issue 7 and a clear mark where the goal is missed.  Each section runs in its own
child process (``benchmarks/bench_*.py``, ``benchmarks/tui_bench.py``), so one failing
section is reported and the others still run.  Inputs:

* heat2d_large: ``$CLTUI_HEAT2D_DIR`` or /tmp/heat2d/heat2d_large, else unpacked from
  ``$CLTUI_SHARED`` (default: ``shared/`` beside the checkout)
  ``/captures/heat2d_large/heat2d_large.tar.zst`` into /tmp/cltui-bench/;
* the synthetic 10^6-enqueue log: ``benchmarks/synth_log.py`` output, cached in
  /tmp/cltui-bench/synth1m (made once, reused);
* cross-vendor results: ``benchmarks/results/h200/*.json`` (rendered if present).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BENCH_TMP = Path(os.environ.get("CLTUI_BENCH_TMP", "/tmp/cltui-bench"))
HEAT2D_DEFAULT = Path("/tmp/heat2d/heat2d_large")
SHARED = Path(os.environ.get("CLTUI_SHARED", ROOT.parent / "shared")).resolve()
HEAT2D_ARCHIVE = SHARED / "captures" / "heat2d_large" / "heat2d_large.tar.zst"
PYOCL = SHARED / "captures" / "pyopencl_lib_pocl"
SYNTH = BENCH_TMP / "synth1m"
RESULTS_H200 = HERE / "results" / "h200"
RESULTS_H200_LAUNCH = HERE / "results" / "h200-launch"
SECTIONS = ("index", "tui", "replay", "compare", "export", "fleet", "pathological", "sources")

Figure = dict[str, Any]


class BenchError(Exception):
    """A section could not run (one line)."""


# --------------------------------------------------------------------------- helpers


def _py() -> str:
    return sys.executable


def _child(
    args: Sequence[str], timeout: float, label: str, env: dict[str, str] | None = None
) -> str:
    """Run a benchmark child (``python ARGS``) and return its stdout; ``label`` names it in
    the one-line error of a child that runs too long or fails."""
    try:
        out = subprocess.run(
            [_py(), *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise BenchError(f"{label} ran past {timeout:.0f} s") from None
    if out.returncode != 0:
        tail = (out.stderr or out.stdout).strip().splitlines()[-1:] or ["(no output)"]
        raise BenchError(f"{label} exited {out.returncode}: {tail[0][:300]}")
    return out.stdout


def _child_json(args: Sequence[str], timeout: float, env: dict[str, str] | None = None) -> Any:
    """Run a benchmark child; its stdout is one JSON document."""
    label = Path(args[0]).name
    try:
        return json.loads(_child(args, timeout, label, env))
    except json.JSONDecodeError:
        raise BenchError(f"{label} printed no JSON") from None


def _log(msg: str) -> None:
    print(msg, flush=True)


def _fmt(v: float | None, digits: int = 2) -> str:
    if v is None:
        return "-"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if abs(v) >= 100:
        return f"{v:.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    return f"{v:.{digits}f}"


def figure(
    name: str,
    ours: str,
    base: str,
    ratio: float | None,
    ratio_def: str,
    goal: str = "",
    ok: bool | None = None,
    measured: str = "",
) -> Figure:
    """One row; ``measured`` is the value an absolute goal is judged on (when not the ratio)."""
    return {
        "name": name,
        "ours": ours,
        "base": base,
        "ratio": ratio,
        "ratio_def": ratio_def,
        "goal": goal,
        "ok": ok,
        "measured": measured,
    }


# --------------------------------------------------------------------------- inputs


def ensure_heat2d() -> Path:
    env = os.environ.get("CLTUI_HEAT2D_DIR")
    for cand in (Path(env) if env else None, HEAT2D_DEFAULT, BENCH_TMP / "heat2d_large"):
        if cand is not None and (cand / "clintercept_log.txt").is_file():
            return cand
    if not HEAT2D_ARCHIVE.is_file():
        raise BenchError(f"no heat2d_large capture and no archive at {HEAT2D_ARCHIVE}")
    _log(f"unpacking {HEAT2D_ARCHIVE} into {BENCH_TMP} ...")
    BENCH_TMP.mkdir(parents=True, exist_ok=True)
    tmp = BENCH_TMP / "heat2d.unpacking"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    r = subprocess.run(
        ["tar", "--zstd", "-xf", str(HEAT2D_ARCHIVE), "-C", str(tmp)],
        capture_output=True,
        text=True,
        check=False,
    )
    if r.returncode != 0:
        raise BenchError(f"cannot unpack {HEAT2D_ARCHIVE}: {r.stderr.strip()[:200]}")
    (tmp / "heat2d_large").rename(BENCH_TMP / "heat2d_large")
    tmp.rmdir()
    return BENCH_TMP / "heat2d_large"


def ensure_synth(heat2d: Path) -> Path:
    if (SYNTH / "clintercept_log.txt").is_file():
        return SYNTH
    _log(f"synthesising the 10^6-enqueue log into {SYNTH} (once) ...")
    tmp = SYNTH.with_name(SYNTH.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    r = subprocess.run(
        [_py(), str(HERE / "synth_log.py"), str(heat2d), str(tmp)],
        capture_output=True,
        text=True,
        check=False,
    )
    if r.returncode != 0:
        raise BenchError(f"synth_log.py failed: {r.stderr.strip()[-200:]}")
    tmp.rename(SYNTH)
    return SYNTH


# --------------------------------------------------------------------------- machine


def machine() -> dict[str, str]:
    info: dict[str, str] = {}
    cpu = platform.processor() or "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    info["CPU"] = cpu
    info["cores"] = str(os.cpu_count())
    try:
        kb = int(re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text()).group(1))  # type: ignore[union-attr]
        info["RAM"] = f"{kb / 1024 / 1024:.1f} GiB"
    except (OSError, AttributeError):
        info["RAM"] = "?"
    osname = platform.system()
    try:
        m = re.search(r'PRETTY_NAME="([^"]+)"', Path("/etc/os-release").read_text())
        if m:
            osname = m.group(1)
    except OSError:
        pass
    info["OS"] = f"{osname}, kernel {platform.release()}"
    info["Python"] = platform.python_version()
    try:
        import numpy

        info["numpy"] = numpy.__version__
    except ImportError:
        info["numpy"] = "missing"
    try:
        import textual

        info["textual"] = getattr(textual, "__version__", "?")
    except ImportError:
        info["textual"] = "missing"
    try:
        import pyopencl

        info["pyopencl"] = pyopencl.VERSION_TEXT
        sys.path.insert(0, str(ROOT))
        from cltui.replay.engine import list_devices

        for d in list_devices():
            info[f"OpenCL {d['id']}"] = (
                f"{d['name']} ({d['platform']}; {d['platform_version']}; driver {d['driver']})"
            )
    except Exception as exc:  # a broken ICD must not stop the report
        info["pyopencl"] = f"unavailable ({type(exc).__name__})"
    try:
        with open("/proc/loadavg") as f:
            info["load at start"] = " ".join(f.read().split()[:3])
    except OSError:
        pass
    return info


# --------------------------------------------------------------------------- sections


def section_index(heat2d: Path, synth: Path, quick: bool) -> dict[str, Any]:
    reps = ("2", "2") if quick else ("5", "5")
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import bench_index; "
        "print(json.dumps(bench_index.run(__import__('pathlib').Path(sys.argv[2]), sys.argv[3], "
        "int(sys.argv[4]))))"
    )
    rows = []
    for path, label, rep in (
        (heat2d, "heat2d_large (real)", reps[0]),
        (synth, "synthetic 10^6 enqueues", reps[1]),
    ):
        _log(f"  index: {label}")
        rows.append(_child_json(["-c", code, str(HERE), str(path), label, rep], 600))
    figs: list[Figure] = []
    for r in rows:
        ok = r["ratio_vs_find_enqueue"] >= 0.4
        figs.append(
            figure(
                f"index speed, {r['label']} ({r['log_mb']:.0f} MB, {r['enqueues']:,} enqueues)",
                f"{r['cltui_mb_s']:.0f} MB/s, {r['cltui_enqueues_s']:,} enq/s "
                f"(wall {r['cltui_s']:.2f} s, CPU {r['cltui_cpu_s']:.2f} s; the import "
                f"before it: {r.get('cltui_import_s', 0.0):.2f} s)",
                f"`mmap.find(b'clEnqueue')` loop: {r['find_enqueue_mb_s']:.0f} MB/s, "
                f"{r['find_enqueue_enqueues_s']:,} enq/s "
                f"(wall {r['find_enqueue_s']:.2f} s, CPU {r['find_enqueue_cpu_s']:.2f} s)",
                r["ratio_vs_find_enqueue"],
                "find wall time / index wall time (CPU-time ratio "
                f"{r['ratio_cpu_vs_find_enqueue']:.2f})",
                ">= 0.40",
                ok,
            )
        )
        figs.append(
            figure(
                f"index vs raw bandwidth, {r['label']}",
                f"{r['cltui_mb_s']:.0f} MB/s",
                f"one `mmap.find` of an absent pattern: {r['find_absent_mb_s']:.0f} MB/s",
                r["ratio_vs_find_absent"],
                "find wall time / index wall time",
            )
        )
        if "10^6" in r["label"]:
            figs.append(
                figure(
                    f"peak RSS of the index, {r['label']}",
                    f"{r['cltui_peak_rss_mb']:.0f} MB"
                    + (
                        f" (its largest worker process: {r['cltui_worker_peak_rss_mb']:.0f} MB)"
                        if r.get("cltui_worker_peak_rss_mb")
                        else ""
                    ),
                    f"the find loop: {r['find_enqueue_peak_rss_mb']:.0f} MB (the mapped log)",
                    r["cltui_peak_rss_mb"] / 150.0,
                    "RSS / 150 MB goal",
                    "<= 150 MB",
                    r["cltui_peak_rss_mb"] <= 150.0,
                    f"{r['cltui_peak_rss_mb']:.0f} MB",
                )
            )
        else:
            figs.append(
                figure(
                    f"peak RSS of the index, {r['label']}",
                    f"{r['cltui_peak_rss_mb']:.0f} MB"
                    + (
                        f" (its largest worker process: {r['cltui_worker_peak_rss_mb']:.0f} MB)"
                        if r.get("cltui_worker_peak_rss_mb")
                        else ""
                    ),
                    f"the find loop: {r['find_enqueue_peak_rss_mb']:.0f} MB (the mapped log)",
                    r["cltui_peak_rss_mb"] / r["find_enqueue_peak_rss_mb"],
                    "index RSS / find-loop RSS",
                )
            )
    return {"raw": rows, "figures": figs}


# A bare Textual app at the same size, measured the same way (the TUI's baseline).
BARE_TUI = r"""
import asyncio, json, statistics, time
from textual.app import App, ComposeResult
from textual.widgets import Static

class Bare(App[None]):
    def compose(self) -> ComposeResult:
        yield Static("\n".join(f"line {i}" for i in range(40)))

KEYS = ["down", "pagedown", "shift+down", "n", "up", "pageup", "end", "home"]

async def main() -> None:
    app = Bare()
    t0 = time.perf_counter()
    async with app.run_test(size=(120, 36)) as pilot:
        first = time.perf_counter() - t0
        await pilot.pause()
        keys = {}
        for k in KEYS:
            times = []
            for _ in range(15):
                s = time.perf_counter()
                await pilot.press(k)
                times.append(time.perf_counter() - s)
            keys[k] = statistics.median(times) * 1e3
    print(json.dumps({"first_paint_s": first, "keys_ms": keys}))

asyncio.run(main())
"""

# tui_bench.py prints a text report; this child runs its main() with report() swapped for a
# JSON printer (tui_bench.py itself is not changed).
TUI_HOOK = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import tui_bench
tui_bench.report = lambda r: print("CLTUI-BENCH-JSON " + json.dumps(r, default=str), flush=True)
sys.argv = ["tui_bench.py", *sys.argv[2:]]
raise SystemExit(tui_bench.main())
"""
_TUI_TAG = "CLTUI-BENCH-JSON "


def parse_tui_output(text: str) -> list[dict[str, Any]]:
    """The result dicts tui_bench.py's report() was given (one per measured capture)."""
    rows: list[dict[str, Any]] = []
    for line in text.splitlines():
        if line.startswith(_TUI_TAG):
            try:
                row = json.loads(line[len(_TUI_TAG) :])
            except json.JSONDecodeError:
                continue
            if isinstance(row, dict) and "first_paint_s" in row:
                rows.append(row)
    return rows


def _run_tui_bench(args: list[str], timeout: float) -> list[dict[str, Any]]:
    label = f"tui_bench.py {' '.join(args)}"
    rows = parse_tui_output(_child(["-c", TUI_HOOK, str(HERE), *args], timeout, label))
    if not rows:
        raise BenchError("tui_bench.py reported no result this script can read")
    return rows


def section_tui(heat2d: Path, synth: Path, quick: bool) -> dict[str, Any]:
    if not (HERE / "tui_bench.py").is_file():
        raise BenchError("benchmarks/tui_bench.py does not exist yet")
    none = str(BENCH_TMP / "no-such-capture")
    runs = [
        ["--n", "10000", "--heat2d", none],
        ["--n", "100000", "--heat2d", none],
        ["--n", "1000000", "--heat2d", str(heat2d)] + ([] if quick else ["--log-dir", str(synth)]),
    ]
    rows: list[dict[str, Any]] = []
    bare: list[dict[str, Any]] = []
    for args in runs:
        _log(f"  tui: tui_bench.py {' '.join(args)}")
        bare.append(_child_json(["-c", BARE_TUI], 120))
        rows.extend(_run_tui_bench(args, 400))
    bare.append(_child_json(["-c", BARE_TUI], 120))
    base_paint = min(b["first_paint_s"] for b in bare)
    base_keys = {k: min(b["keys_ms"][k] for b in bare) for k in bare[0]["keys_ms"]}
    figs: list[Figure] = []
    for r in rows:
        label = f"{r['label']}, {r['rows']:,} enqueues"
        paint = float(r["first_paint_s"])
        figs.append(
            figure(
                f"first paint, {label}",
                f"{paint * 1e3:.0f} ms (list filled at {float(r.get('index_ready_s', 0)):.2f} s)",
                f"a bare Textual app: {base_paint * 1e3:.0f} ms",
                paint / base_paint,
                "cltui / bare app",
                "<= 0.5 s",
                paint <= 0.5,
                f"{paint * 1e3:.0f} ms",
            )
        )
        typed = [float(x) for x in r.get("filter_keys_ms") or []]
        if typed:
            worst = max(typed)
            figs.append(
                figure(
                    f"filter as you type, {label} ({r.get('filter_text', '')!r}, a key at a time)",
                    f"key to the list's repaint: median {statistics.median(typed):.1f} ms, "
                    f"max {worst:.1f} ms ({len(typed)} keys)",
                    "-", None, "-", "<= 50 ms a key", worst <= 50.0, f"max {worst:.1f} ms",
                )
            )
        if isinstance(r.get("sort_ms"), int | float):
            sort_ms = float(r["sort_ms"])
            figs.append(
                figure(
                    f"sort by device time (S), {label}",
                    f"{sort_ms:.0f} ms to the list's repaint",
                    "-", None, "-", "<= 1 s", sort_ms <= 1000.0, f"{sort_ms:.0f} ms",
                )
            )
        keys = {k: [float(x) for x in v] for k, v in r["keys_ms"].items() if v}
        if not keys:
            continue
        worst_key = max(keys, key=lambda k: keys[k][0])
        med, mx = keys[worst_key][0], keys[worst_key][1]
        noop = r.get("noop_ms")
        ratio: float | None
        if isinstance(noop, int | float) and noop > 0:
            base_text = f"a key bound to nothing, same app: {noop:.1f} ms"
            ratio = (med + noop) / noop
            ratio_def = "key wall time / no-op key wall time"
            what = "median minus the no-op key"
        else:
            b = base_keys.get(worst_key)
            base_text = f"the same key on a bare Textual app: {b:.1f} ms" if b else "-"
            ratio = med / b if b else None
            ratio_def = "cltui / bare app (medians)"
            what = "median"
        cpu = f"; CPU per key {keys[worst_key][2]:.1f} ms" if len(keys[worst_key]) > 2 else ""
        figs.append(
            figure(
                f"keypress to repaint, {label} (slowest key: {worst_key})",
                f"{what} {med:.1f} ms (max {mx:.1f} ms{cpu}); all keys: "
                + ", ".join(f"{k} {v[0]:.1f}" for k, v in keys.items()),
                base_text,
                ratio,
                ratio_def,
                "<= 16 ms",
                med <= 16.0,
                f"{med:.1f} ms",
            )
        )
    return {"raw": {"tui_bench": rows, "bare_app": bare}, "figures": figs}


def section_replay(device: str, quick: bool) -> dict[str, Any]:
    args = [str(HERE / "bench_replay_vs_raw.py"), "--device", device] + (
        ["--quick"] if quick else []
    )
    _log("  replay: overhead, range vs one process per kernel, upload")
    r = _child_json(args, 540)
    figs: list[Figure] = []
    for o in r["overhead"]:
        figs.append(
            figure(
                f"host time per launch, {o['capture']} {o['range']} ({o['kernels']} kernels, "
                f"{o['writes_in_loop_per_repetition']} reload(s) in the loop; PoCL with "
                f"{o['pocl_workers']} worker thread)",
                f"{o['engine_us_per_launch']:.2f} us (engine loop timer; median of "
                f"{o['repeat']} repetitions, median of {o['rounds']} rounds)",
                f"raw pyopencl loop: {o['raw_us_per_launch']:.2f} us",
                o["ratio"],
                "engine / raw, median of the per-round ratios",
                "<= 1.3",
                o["ratio"] <= 1.3,
            )
        )
    for o in r.get("overhead_default_workers", []):
        figs.append(
            figure(
                f"host time per launch, {o['capture']} {o['range']}, PoCL's default workers "
                "(one per core: the host thread shares the cores with the kernels)",
                f"{o['engine_us_per_launch']:.2f} us",
                f"raw pyopencl loop: {o['raw_us_per_launch']:.2f} us",
                o["ratio"],
                "engine / raw, median of the per-round ratios (rounds: "
                + ", ".join(f"{x:.2f}" for x in o["ratio_rounds"])
                + ")",
            )
        )
        figs.append(
            figure(
                f"the launch call alone, {o['capture']} {o['range']}",
                f"{o['engine_launch_call_us']:.2f} us",
                f"raw: {o['raw_launch_call_us']:.2f} us",
                o["engine_launch_call_us"] / o["raw_launch_call_us"],
                "engine / raw",
            )
        )
    for p in r["range"]:
        figs.append(
            figure(
                f"chained range in one run, {p['capture']} {p['range']} ({p['kernels']} kernels, "
                f"{p['programs']} programs)",
                f"{p['one_run_s']:.2f} s (cltui replay runner, checks {p['one_run_status']})",
                f"one raw pyopencl process per kernel: {p['per_process_s']:.1f} s "
                f"({p['per_process_s_per_kernel']:.2f} s each, "
                f"{p['raw_children_matching_post']}/{p['kernels']} match their Post dumps)",
                p["ratio"],
                "per-process time / one-run time",
                ">= 20x",
                p["ratio"] >= 20.0,
            )
        )
    for u in r["upload"]:
        for c in u["cases"]:
            figs.append(
                figure(
                    f"upload, {u['capture']} {u['range']}: {c['what']} "
                    f"({c['files']} file(s), {c['bytes'] / 1e6:.2f} MB)",
                    f"{c['cltui_mb_s']:,.0f} MB/s (memmap + Engine._write)",
                    f"`enqueue_copy` from RAM: {c['plain_mb_s']:,.0f} MB/s; "
                    f"`np.fromfile` + copy: {c['from_file_mb_s']:,.0f} MB/s "
                    f"(ratio {c['ratio_vs_from_file']:.2f})",
                    c["ratio"],
                    "cltui speed / from-RAM copy speed",
                )
            )
    dev = r["device"]
    return {"raw": r, "figures": figs, "note": f"device {dev['id']} {dev['name']}"}


def section_compare(quick: bool) -> dict[str, Any]:
    _log("  compare: equal check, differing-buffer analysis, hash-only check")
    r = _child_json([str(HERE / "bench_compare.py"), *(["--quick"] if quick else [])], 400)
    figs: list[Figure] = []
    for e in r["equal"]:
        figs.append(
            figure(
                f"equal-buffer check, float32, {e['size_mb']} MiB",
                f"{e['cltui_gb_s']:.1f} GB/s (`compare_bytes`)",
                f"`np.array_equal`: {e['numpy_gb_s']:.1f} GB/s",
                e["ratio"],
                "time(np) / time(cltui)",
                ">= 0.5",
                e["ratio"] >= 0.5,
            )
        )
    for d in r["differing"]:
        figs.append(
            figure(
                f"differing-buffer analysis, float32, {d['size_mb']} MiB, "
                f"{d['n_diff']:,} scattered differences (1..8 ULP, tolerance 4 ULP)",
                f"{d['cltui_mb_s']:,.0f} MB/s (`compare_bytes`, verdict {d['status']})",
                f"hand-written numpy (count, max abs, max ULP, first): {d['numpy_mb_s']:,.0f} MB/s",
                d["ratio"],
                "time(numpy) / time(cltui)",
            )
        )
    for h in r.get("hash", []):
        figs.append(
            figure(
                f"hash-only check (DumpBufferHashes), {h['size_mb']} MiB",
                f"{h['cltui_mb_s']:,.0f} MB/s (the engine's one-work-item kernel on "
                f"{h['device']}, upload included)",
                f"`cli_hash64` in Python: {h['python_mb_s']:,.1f} MB/s",
                h["ratio"],
                "time(Python) / time(cltui)",
            )
        )
    return {"raw": r, "figures": figs}


def section_export(heat2d: Path, quick: bool) -> dict[str, Any]:
    rows = []
    # heat2d: its dumped window (37 kernels) and the 50-kernel range that ends there (the
    # replay benchmark's; its first 13 kernels have no dumps: zero-filled, unchecked)
    for cap, rng in ((heat2d, "122380-122419"), (heat2d, "122367-122419"), (PYOCL, "0-39")):
        _log(f"  export: {cap.name} {rng}")
        rows.append(
            _child_json(
                [str(HERE / "bench_export.py"), str(cap), rng, "--repeat", "2" if quick else "3"],
                300,
            )
        )
    figs: list[Figure] = []
    for r in rows:
        figs.append(
            figure(
                f"bundle data size, {r['label']} {r['range']} ({r['kernels']} kernels)",
                f"{r['bundle_data_bytes'] / 1e6:.3f} MB in {r['bundle_data_files']} files",
                f"unique contents (sha256 here): {r['unique_bytes'] / 1e6:.3f} MB in "
                f"{r['unique_files']}; all {r['data_refs']} references: "
                f"{r['all_refs_bytes'] / 1e6:.3f} MB",
                r["size_ratio"],
                "bundle / unique",
                "= 1.00",
                abs(r["size_ratio"] - 1.0) < 1e-9,
            )
        )
        figs.append(
            figure(
                f"export time, {r['label']} {r['range']} ({r['kernels']} kernels, python+cpp, "
                f"{r['bundle_files']} files)",
                f"{r['export_s'] * 1e3:.0f} ms (`export_range`, plan included)",
                f"`shutil.copyfile` of the {r['copied_files']} referenced files: "
                f"{r['copy_s'] * 1e3:.0f} ms",
                r["time_ratio"],
                "export / copy",
            )
        )
    return {"raw": rows, "figures": figs}


def section_fleet(quick: bool) -> dict[str, Any]:
    """``cltui fleet`` on 4 local sshd hosts (benchmarks/bench_fleet.py)."""
    _log("  fleet: 4 sshd hosts")
    r = _child_json([str(HERE / "bench_fleet.py"), *(["--quick"] if quick else [])], 1200)
    par, b, small, oh = r["parallel"], r["bytes"], r["small_bytes"], r["overhead"]
    ratio = par["parallel_s"] / par["slowest_alone_s"]
    cpu_bound = max(par["slowest_alone_s"], par["sum_alone_s"] / max(1, par["cores"]))
    alone = ", ".join(f"{n} {v:.2f} s" for n, v in sorted(par["alone_s"].items()))
    figs = [
        figure(
            f"4 hosts in parallel, {r['capture']} {r['range']}",
            f"{par['parallel_s']:.2f} s (the CPU bound of {par['cores']} cores: "
            f"{cpu_bound:.2f} s = {par['parallel_s'] / cpu_bound:.2f}x it)",
            f"the slowest host alone: {par['slowest_alone_s']:.2f} s ({alone})",
            ratio, "parallel / slowest alone", "<= 1.3", ratio <= 1.3,
        ),
    ]
    for rr in (b, small):
        share = rr["second"] / rr["first"]
        figs.append(figure(
            f"bytes of a second run of the same range, {rr['capture']} {rr['range']} "
            f"({rr['bundle_files']} files, {rr['bundle_bytes'] / 1e6:.2f} MB)",
            f"{rr['second']:,} bytes (the bundle found in the host's cache; exported again: "
            f"{rr['reexported']:,} bytes, {rr['reexported_files']} files)",
            f"the first run: {rr['first']:,} bytes", share, "second / first", "<= 0.01",
            share <= 0.01, f"{share * 100:.2f} %",
        ))
    figs.append(figure(
        "one command over the warm multiplexed connection",
        f"{oh['ssh_ms']:.1f} ms (max {oh['ssh_max_ms']:.1f} ms)",
        f"`sh -c true` started here: {oh['local_ms']:.1f} ms", oh["ssh_ms"] / oh["local_ms"],
        "ssh / local", "<= 50 ms", oh["ssh_ms"] <= 50, f"{oh['ssh_ms']:.1f} ms",
    ))
    return {"raw": r, "figures": figs}


def section_sources(quick: bool) -> dict[str, Any]:
    """``benchmarks/pathological_sources.py`` in a child process: each pathological kernel
    source next to the real one of the same size (1 and 2 copies; best of 2, of 1 with
    ``--quick``)."""
    copies, turns = ("1,2", "1") if quick else ("1,2", "2")
    out = BENCH_TMP / "pathological_sources.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.unlink(missing_ok=True)
    try:
        proc = subprocess.run(
            [
                _py(), str(HERE / "pathological_sources.py"), "--copies", copies,
                "--turns", turns, "--json", str(out),
            ],
            cwd=ROOT,
            text=True,
            timeout=5400,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise BenchError("pathological_sources.py ran past 5400 s") from None
    if proc.returncode not in (0, 1) or not out.is_file():  # 1: a goal missed
        raise BenchError(f"pathological_sources.py exited {proc.returncode}")
    doc: dict[str, Any] = json.loads(out.read_text())
    return doc


def section_pathological(quick: bool) -> dict[str, Any]:
    """``benchmarks/pathological.py`` in a child process: each pathological log next to an
    intact log of the same size (1 MB to 1 GB; 1 and 16 MB with ``--quick``)."""
    sizes = "1,16" if quick else "1,16,256,1024"
    out = BENCH_TMP / "pathological.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    _log(f"  pathological: sizes {sizes} MB")
    out.unlink(missing_ok=True)
    try:
        proc = subprocess.run(
            [_py(), str(HERE / "pathological.py"), "--sizes", sizes, "--json", str(out)],
            cwd=ROOT,
            text=True,
            timeout=5400,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise BenchError("pathological.py ran past 5400 s") from None
    if proc.returncode not in (0, 1) or not out.is_file():  # 1: a goal missed
        raise BenchError(f"pathological.py exited {proc.returncode}")
    doc: dict[str, Any] = json.loads(out.read_text())
    return doc


# --------------------------------------------------------------------------- H200


_STAGES = ("queued_to_submit", "submit_to_start", "start_to_end", "host_enqueue")


def _engine_results(doc: Any) -> list[dict[str, Any]]:
    """Engine/replay.py results (dicts with ``device`` and ``steps``) anywhere in ``doc``."""
    found: list[dict[str, Any]] = []
    if isinstance(doc, dict):
        if isinstance(doc.get("steps"), list) and isinstance(doc.get("device"), dict):
            found.append(doc)
            return found
        for v in doc.values():
            found.extend(_engine_results(v))
    elif isinstance(doc, list):
        for v in doc:
            found.extend(_engine_results(v))
    return found


def _stage(timing: dict[str, Any], k: str) -> float | None:
    v = timing.get(k)
    if isinstance(v, dict):
        med = v.get("median")
        return float(med) if isinstance(med, int | float) else None
    return float(v) if isinstance(v, int | float) else None


def _is_pocl(device: Any) -> bool:
    text = json.dumps(device).lower()
    return "pocl" in text or "portable computing language" in text


def _runner_label(path: Path, res: dict[str, Any]) -> str:
    dev = res.get("device", {})
    runner = res.get("runner") or ("replay.cpp" if ".cpp." in path.name else "replay.py")
    return f"{dev.get('name', '?')}, {runner}"


def _differ(rr: dict[str, Any]) -> str:
    n, total = rr.get("n_diff"), rr.get("elements")
    if not isinstance(n, int) or not n:
        return "-"
    return f"{n:,}/{total:,}" if isinstance(total, int) else f"{n:,}"


def _first(rr: dict[str, Any]) -> str:
    f = rr.get("first")
    if not isinstance(f, dict):
        return "-"
    where = f.get("where") or (f"[{f['index']}]" if "index" in f else "?")
    return f"{where}: {f.get('expected')} / {f.get('actual')}"


def _num(v: Any, fmt: str) -> str:
    if isinstance(v, int | float):
        return fmt.format(v)
    return "-" if v is None else str(v)


def _ratio_text(mine: float | None, theirs: float | None) -> str:
    if mine is None:
        return "-"
    if theirs:
        return f"{_fmt(mine)} ({mine / theirs:.2f}x)"
    return _fmt(mine)


def _render_engine(
    runs: list[tuple[str, dict[str, Any]]], pocl: dict[str, Any] | None
) -> list[str]:
    """One table per device/runner: per enqueue and argument, next to PoCL's run."""
    lines: list[str] = []
    pocl_steps: dict[int, dict[str, Any]] = {}
    if pocl is not None:
        pocl_steps = {int(st["enqueue"]): st for st in pocl.get("steps", [])}
    for label, res in runs:
        steps = res.get("steps", [])
        passed = sum(1 for st in steps if st.get("status") == "pass")
        head = f"*{label}*: {passed}/{len(steps)} enqueues pass"
        loop = (res.get("loop") or {}).get("host_ns_per_repetition") or {}
        if loop.get("median") and res.get("loop", {}).get("launches"):
            per = float(loop["median"]) / int(res["loop"]["launches"])
            head += f"; host time per launch in back-to-back repetitions {per / 1e3:.1f} us"
        if res.get("error"):
            head += f"; stopped: {res['error']}"
        lines += [head, ""]
        if not steps:
            continue
        vs = pocl is not None and res is not pocl
        cols = ["enqueue", "kernel", "argument", "verdict", "differ", "max abs", "max ULP"]
        cols.append("first difference (expected / got)")
        if vs:
            cols.append("PoCL verdict")
        cols += [f"{s} ns" + (" (x PoCL)" if vs else "") for s in _STAGES]
        lines.append("| " + " | ".join(cols) + " |")
        lines.append("|" + "---|" * len(cols))
        for st in steps:
            timing = st.get("timing", {})
            other = pocl_steps.get(int(st["enqueue"]), {}) if vs else {}
            other_t = other.get("timing", {})
            stages = [_ratio_text(_stage(timing, s), _stage(other_t, s)) for s in _STAGES]
            other_checks = {c.get("label"): c for c in other.get("checks", [])}
            for c in st.get("checks") or [{}]:
                rr = c.get("result") or {}
                row = [
                    str(st.get("enqueue")),
                    str(st.get("kernel")),
                    str(c.get("label", "-")),
                    str(c.get("status", st.get("status", "-"))),
                    _differ(rr),
                    _num(rr.get("max_abs"), "{:.3g}"),
                    _num(rr.get("max_ulp"), "{:,.0f}"),
                    _first(rr),
                ]
                if vs:
                    oc = other_checks.get(c.get("label"))
                    row.append(str(oc.get("status", "-")) if oc else "-")
                lines.append("| " + " | ".join(row + stages) + " |")
        lines.append("")
    return lines


def _render_uploads(uploads: list[tuple[str, dict[str, Any]]]) -> list[str]:
    lines = [
        "### Upload of the bundle inputs vs a pinned-memory copy (goal >= 0.80)",
        "",
        "| bundle | device | inputs | bytes | engine GB/s | pinned GB/s | ratio | verdict "
        "| scaled to | engine GB/s | pinned GB/s | ratio | verdict |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]

    def verdict(v: Any) -> str:
        return "-" if not isinstance(v, int | float) else ("met" if v >= 0.8 else "**MISSED**")

    for name, u in uploads:
        r1, r2 = u.get("ratio_engine_vs_pinned"), u.get("scaled_ratio_engine_vs_pinned")
        scaled = u.get("scaled_bytes")
        lines.append(
            f"| {u.get('bundle', name)} | {u.get('device', '-')} | {u.get('inputs', '-')} | "
            f"{u.get('input_bytes', '-')} | {_fmt(u.get('engine_gb_s'))} | "
            f"{_fmt(u.get('pinned_gb_s'))} | {_fmt(r1)} | {verdict(r1)} | "
            f"{f'{scaled / 2**20:.0f} MiB' if isinstance(scaled, int | float) else '-'} | "
            f"{_fmt(u.get('scaled_engine_gb_s'))} | {_fmt(u.get('scaled_pinned_gb_s'))} | "
            f"{_fmt(r2)} | {verdict(r2)} |"
        )
    return [*lines, ""]


def _render_generic(name: str, doc: Any) -> list[str]:
    """Any JSON: each list of flat records as a table, other values as a list."""
    lines = [f"**{name}**", ""]
    scalars: list[str] = []

    def walk(v: Any, path: str) -> None:
        if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            cols: list[str] = []
            for x in v:
                for k, val in x.items():
                    if not isinstance(val, dict | list) and k not in cols:
                        cols.append(k)
            if cols:
                lines.append(f"`{path or '.'}`:")
                lines.append("")
                lines.append("| " + " | ".join(cols[:12]) + " |")
                lines.append("|" + "---|" * len(cols[:12]))
                for x in v[:200]:
                    lines.append("| " + " | ".join(str(x.get(c, "")) for c in cols[:12]) + " |")
                lines.append("")
            for i, x in enumerate(v[:50]):
                for k, val in x.items():
                    if isinstance(val, dict | list):
                        walk(val, f"{path}[{i}].{k}")
        elif isinstance(v, dict):
            for k, val in v.items():
                walk(val, f"{path}.{k}" if path else str(k))
        elif isinstance(v, list):
            scalars.append(f"- `{path}`: {json.dumps(v)[:200]}")
        else:
            scalars.append(f"- `{path}`: {v}")

    walk(doc, "")
    return lines + scalars[:60] + [""]


def render_h200() -> list[str]:
    files = sorted(RESULTS_H200.glob("*.json")) if RESULTS_H200.is_dir() else []
    lines = ["## Cross-vendor replay: NVIDIA H200 vs PoCL", ""]
    if not files:
        lines += [
            "No results yet: the cross-vendor run (issue 7, part 2) writes its raw JSON to "
            "`benchmarks/results/h200/*.json`, with its exact command lines; `benchmarks/run.py` "
            "renders every file found there into this section (per enqueue and argument: "
            "verdict, max abs/ULP error, launch stages next to PoCL).",
            "",
        ]
        return lines
    rel_dir = RESULTS_H200.relative_to(ROOT) if RESULTS_H200.is_relative_to(ROOT) else RESULTS_H200
    lines += [
        f"Rendered from the {len(files)} JSON files under `{rel_dir}/` (the raw results; how "
        f"they were made: `{rel_dir}/COMMANDS.md`).  Files are grouped by bundle (the name "
        "before the first dot); each device/runner's table puts every enqueue and checked "
        "argument next to the same bundle replayed on PoCL here.  Stage times are medians "
        "in ns; (x PoCL) is the H200 figure over PoCL's.",
        "",
    ]
    lines += _machine_block(RESULTS_H200 / "machine.txt")
    groups: dict[str, list[Path]] = {}
    for f in files:
        groups.setdefault(f.name.split(".", 1)[0], []).append(f)
    uploads: list[tuple[str, dict[str, Any]]] = []
    for bundle, paths in groups.items():
        runs: list[tuple[str, dict[str, Any]]] = []
        other: list[str] = []
        for f in paths:
            try:
                doc = json.loads(f.read_text())
            except (OSError, json.JSONDecodeError) as exc:
                other += [f"`{f.name}`: cannot read ({type(exc).__name__})", ""]
                continue
            results = _engine_results(doc)
            if results:
                runs += [(_runner_label(f, r), r) for r in results]
            elif isinstance(doc, dict) and "ratio_engine_vs_pinned" in doc:
                uploads.append((bundle, doc))
            else:
                other += _render_generic(f"`{f.name}`", doc)
        lines += [f"### {bundle}", ""]
        pocl = next((r for _label, r in runs if _is_pocl(r.get("device", {}))), None)
        ordered = [x for x in runs if x[1] is not pocl] + [x for x in runs if x[1] is pocl]
        lines += _render_engine(ordered, pocl)
        lines += other
    if uploads:
        lines += _render_uploads(uploads)
    return lines


def _machine_block(path: Path) -> list[str]:
    """A results folder's machine.txt as a code block (nothing when it is missing)."""
    if not path.is_file():
        return []
    return ["```", path.read_text().strip(), "```", ""]


def render_h200_launch() -> list[str]:
    """The engine's launch overhead and the one-run range on the H200 (its raw JSON)."""
    d = RESULTS_H200_LAUNCH
    try:
        over = json.loads((d / "overhead.nvidia.json").read_text())
        ranges = json.loads((d / "range.nvidia.json").read_text())
    except (OSError, json.JSONDecodeError):
        return []
    rel = d.relative_to(ROOT) if d.is_relative_to(ROOT) else d
    lines = [
        "## Launch overhead, range replay and hash checks on the NVIDIA H200",
        "",
        f"`benchmarks/bench_replay_vs_raw.py` parts 1 and 2 run on the lent H200 (raw JSON and "
        f"commands: `{rel}/`), measured the same way as on PoCL above: the engine's timed loop "
        "against a raw pyopencl loop over the same kernels, and the replay runner against one "
        "raw pyopencl process per kernel.",
        "",
    ]
    lines += _machine_block(d / "machine.txt")
    lines += [
        "| range | kernels | engine, us a launch | raw pyopencl, us a launch | engine / raw "
        "(median of paired rounds) | launch call alone, engine / raw |",
        "|---|---|---|---|---|---|",
    ]
    for o in over:
        lines.append(
            f"| {o['capture']} {o['range']} | {o['kernels']} | {o['engine_us_per_launch']:.2f} | "
            f"{o['raw_us_per_launch']:.2f} | {o['ratio']:.2f} | "
            f"{o['engine_launch_call_us']:.2f} / {o['raw_launch_call_us']:.2f} |"
        )
    lines += [
        "",
        "| range | kernels (programs) | one run (replay runner) | one raw process per kernel "
        "| ratio |",
        "|---|---|---|---|---|",
    ]
    for r in ranges:
        lines.append(
            f"| {r['capture']} {r['range']} | {r['kernels']} ({r['programs']}) | "
            f"{r['one_run_s']:.2f} s | {r['per_process_s']:.1f} s "
            f"({r['per_process_s_per_kernel']:.2f} s each) | {r['ratio']:.1f}x |"
        )
    hashed = d.parent / "h200-hash" / "hash.nvidia.json"
    try:
        h = json.loads(hashed.read_text())
    except (OSError, json.JSONDecodeError):
        return [*lines, ""]
    big = h["big"]
    lines += [
        "",
        "Hash-only checks (`DumpBufferHashes`) there: the engine's one-work-item kernel "
        f"(`benchmarks/h200/hash_device.py`, raw JSON in `{rel.parent}/h200-hash/`) gives the "
        f"layer's hash for every length tried ({'yes' if h['lengths_equal'] else 'NO'}) and "
        f"for {big['mb']} MiB ({'yes' if big['equal'] else 'NO'}: {big['device_s']:.2f} s in "
        f"{big['launches']} launches, against {big['python_s']:.1f} s in Python).",
        "",
        "| size | the kernel on the H200 | `cli_hash64` in Python (that host) | ratio |",
        "|---|---|---|---|",
    ]
    for r in h["ratio"]:
        lines.append(
            f"| {r['size_mb']} MiB | {r['cltui_mb_s']:.0f} MB/s | {r['python_mb_s']:.1f} MB/s | "
            f"{r['ratio']:.0f}x |"
        )
    return [*lines, ""]


# --------------------------------------------------------------------------- report


SECTION_TITLES = {
    "index": "Capture index",
    "tui": "TUI",
    "replay": "Replay",
    "compare": "Compare",
    "export": "Export",
    "fleet": "Fleet replay over ssh",
    "pathological": "Pathological inputs",
    "sources": "Pathological kernel sources",
}

SECTION_NOTES = {
    "index": (
        "cltui's `build_index` against `mmap.find` loops over the same log (page cache warm), "
        "each in a fresh child process so its peak RSS is its own; the three take turns, best "
        "of N each (5 on each log).  cltui's time is `build_index` alone: "
        "the import before it (numpy and the capture package, the same ~0.1 s for any log) is "
        "timed on its own and shown next to it.  The goal ratio uses wall time (logs over "
        "64 MB are indexed by worker processes, one per core); CPU time (user+sys, the workers "
        "included) is given too, since this 2-core machine is shared and its wall times "
        "include other jobs.  Peak RSS is the main process's; its largest worker's is shown "
        "next to it.  The synthetic log repeats "
        "heat2d_large's real records with renumbered counters (`benchmarks/synth_log.py`)."
    ),
    "tui": (
        "`benchmarks/tui_bench.py` (headless `App.run_test` at 120x36) at 10^4, 10^5 and 10^6 "
        "enqueues (an in-memory synthetic capture; at 10^6 also the real heat2d_large log and "
        "the synthetic 10^6 log through the real index), run as a child process.  Key "
        "latency is tui_bench's figure: the median wall time of `pilot.press(key)` until idle "
        "minus that of a key bound to nothing in the same app (the harness's own cost, the "
        "baseline of the ratio).  First paint's baseline: a bare Textual app of one Static, "
        "started the same way in the same run."
    ),
    "replay": (
        "`benchmarks/bench_replay_vs_raw.py` on PoCL.  Launch overhead: one prepared engine "
        "repeats the range back to back vs a raw pyopencl loop over the same kernel objects, "
        "geometry and reloads (device-side copies from staged buffers, as the engine does; "
        "first inputs restored outside the timed loop on both sides), alternating rounds; "
        "the ratio is the median of the paired per-round ratios.  The goal figures run with "
        "one PoCL worker thread (`POCL_MAX_PTHREAD_COUNT=1`) so that the host loop has a core "
        "of its own: with PoCL's default one worker per core, this 2-core machine's host thread "
        "shares both cores with the kernels it has just enqueued, and a share of the "
        "repetitions (40-70 % in one measurement, raw pyopencl's too) run at ~6 us a launch "
        "instead of ~2 us (the scheduler, not the loop); those figures are given too, without "
        "a goal.  On a CPU device the engine restores each repetition's inputs with host "
        "writes (after device-side copies PoCL's next launches were slower).  "
        "Range: the replay runner "
        "(one child process: builds, uploads, runs, checks) vs one fresh raw-pyopencl process "
        "per kernel that builds its program, uploads its Pre dumps, runs and compares with "
        "its Post dumps (the layer's `run.py` way).  heat2d's dumps cover 37 kernels "
        "(122380-122419); its 50-kernel range starts 13 kernels earlier (those replay "
        "zero-filled and unchecked).  pyopencl_lib_pocl 0-39 (35 kernels, 29 programs) is the "
        "largest range with many programs."
    ),
    "compare": (
        "`benchmarks/bench_compare.py`: `compare_bytes` (what the engine calls) vs numpy on the "
        "same arrays, alternating, best of N."
    ),
    "export": (
        "`benchmarks/bench_export.py`: `export_range` (python+cpp bundle) vs copying the "
        "referenced files; sizes checked against sha256 computed independently."
    ),
    "fleet": (
        "`benchmarks/bench_fleet.py` (`run.py --only fleet`): `cltui fleet`'s job "
        "(`run_fleet`) against 4 real sshd daemons on this machine (`tests/sshd_hosts.py`: "
        "localhost ports, generated keys, each session's HOME a folder of its own, so no shell "
        "start-up file runs), PoCL only (`-d pocl`), the Python runner.  Parallel: the bundle "
        "already in every host's cache (a warm-up run), then each host alone and the 4 "
        "together, taking turns, best of 2.  The 4 \"hosts\" share this machine's 2 cores: "
        "each alone already keeps them busy (python, pyopencl, PoCL), so 4 together cannot "
        "take less than about half the sum of the 4 alone; that CPU bound is given next to "
        "the goal.  Bytes: every byte written to the transport (stdin and the command "
        "lines), a fresh host cache, `opencv_tapi_pocl 0-` (39 kernels, 3.8 MB bundle).  "
        "Overhead: `Transport.run(\"true\")` over the warm multiplexed connection vs "
        "starting `sh -c true` here, taking turns, median of 30."
    ),
    "pathological": (
        "`benchmarks/pathological.py` (`run.py --only pathological` runs it alone and rewrites "
        "only this section): `build_index` of each pathological log next to an intact log of "
        "the same size (MB = 2^20 bytes) in the same run, the two taking turns, each in a "
        "fresh child process (best of 7 builds in it at 1 MB, of 3 at 16 MB, one at 256 MB "
        "and 1 GB; five turns each up to 16 MB, two above).  The intact log repeats "
        "heat2d_large's real records with renumbered counters (the densest real log, the "
        "strictest baseline).  Each pathological log has exactly its size: NUL runs over its "
        "first, middle or last half, 64 NUL runs over a quarter of it, its middle half as one "
        "line, all of it one line, 64 KiB lines of one scanner tag repeated (every literal "
        "the scanner keys on, the NUL byte included), random bytes, one byte repeated, NUL "
        "bytes only.  Logs are generated into a temporary folder and deleted after each size.  "
        "A log made only of lines the scanner acts on (orphan exits, side lines, releases) is "
        "a dense log rather than a damaged one: its cost is linear but ~8x an intact log's "
        "per byte; the hang tests cover it."
    ),
    "sources": (
        "`benchmarks/pathological_sources.py` (`run.py --only sources`): `parse_program` (the "
        "preprocessor and the signature parser, as `show` and the app run it) of each "
        "pathological source next to the largest real source of the shared captures "
        "(pyopencl's 1.6 MB `CLI_0055`), 1 and 2 copies of it, every source exactly that "
        "size, the two taking turns in fresh child processes, best of 2.  The goal is linear "
        "time: the ratio is how much faster than the intact source's its time grows from 1 to "
        "2 copies.  The `Nx intact` figures are per-byte costs against real code: a source "
        "made of one-character tokens (`{`, `f(`, backslashes left of defused quotes) costs "
        "up to ~30x more per byte than real code, whose function bodies are blanked before "
        "pcpp (~10 us a token) sees them."
    ),
}


def render(
    results: dict[str, Any], info: dict[str, str], command: str, total_s: float, date: str
) -> str:
    out = [
        "# cltui benchmarks",
        "",
        "Generated by `benchmarks/run.py`; do not edit by hand (rerun it).",
        "",
        f"- Date: {date}",
        f"- Command: `{command}`",
        f"- Total run time: {total_s:.0f} s",
        "",
        "Every figure is measured next to its baseline in the same run, the two taking turns "
        "(this machine is shared and noisy, so absolute times alone mean little): the ratio "
        "column is what to read.  **MISSED** marks a figure that misses its goal.",
        "",
        "## Machine",
        "",
        "| | |",
        "|---|---|",
    ]
    out += [f"| {k} | {v} |" for k, v in info.items()]
    out.append("")
    missed: list[str] = []
    for sec in SECTIONS:
        if sec not in results:
            continue
        out += render_section(sec, results[sec], missed)
    out += ["## Goals missed in this run", ""]
    out += [f"- {m}" for m in missed] if missed else ["None."]
    out.append("")
    out += render_h200_launch()
    out += render_h200()
    return "\n".join(out).rstrip() + "\n"


def _sections(text: str) -> list[tuple[str, str]]:
    """``text`` cut at its ``## `` headings: (heading, the section's text) in order."""
    out: list[tuple[str, str]] = []
    for part in re.split(r"(?m)^(?=## )", text):
        if part.startswith("## "):
            out.append((part.split("\n", 1)[0].strip(), part))
    return out


def keep_foreign(new: str, old: str) -> str:
    """``new`` (this script's rendering) followed by the sections of ``old`` it does not
    render: the other benchmark scripts' sections (fleet, history, latency, ...) stay."""
    mine = {h for h, _ in _sections(new)}
    kept = [body.rstrip() + "\n" for h, body in _sections(old) if h not in mine]
    return new if not kept else new.rstrip() + "\n\n" + "\n".join(kept)


def _write_report(text: str) -> None:
    path = ROOT / "BENCHMARKS.md"
    old = path.read_text() if path.exists() else ""
    path.write_text(keep_foreign(text, old))


def render_section(sec: str, res: dict[str, Any], missed: list[str]) -> list[str]:
    """The ``## <title>`` block of one section (goals missed are added to ``missed``)."""
    out = [f"## {SECTION_TITLES[sec]}", "", SECTION_NOTES[sec], ""]
    if res.get("note"):
        out += [res["note"], ""]
    if res.get("error"):
        return [*out, f"Not measured: {res['error']}", ""]
    out += [
        "| figure | cltui | baseline (same run) | ratio | ratio is | goal | verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    for f in res["figures"]:
        value = f.get("measured") or _fmt(f["ratio"])
        verdict = "-" if f["ok"] is None else ("met" if f["ok"] else "**MISSED**")
        if f["ok"] is not None and f.get("measured"):
            verdict += f" ({f['measured']})"
        if f["ok"] is False:
            missed.append(f"{SECTION_TITLES[sec]}: {f['name']}: {value}, goal {f['goal']}")
        out.append(
            f"| {f['name']} | {f['ours']} | {f['base']} | {_fmt(f['ratio'])} | "
            f"{f['ratio_def']} | {f['goal'] or '-'} | {verdict} |"
        )
    out.append("")
    return out


def splice_section(text: str, sec: str, res: dict[str, Any], when: str) -> str:
    """``text`` (BENCHMARKS.md) with the block of ``sec`` replaced by a fresh rendering of
    ``res`` (inserted before "Goals missed in this run" if absent); the rest is kept as it
    is.  ``when`` (date and command) heads the block, since the file's header is older."""
    missed: list[str] = []
    block = render_section(sec, res, missed)
    block[4:4] = [f"Measured {when}, on its own.", ""]
    if missed:
        block += ["Goals missed in this section:", "", *[f"- {m}" for m in missed], ""]
    lines = text.splitlines()
    head = f"## {SECTION_TITLES[sec]}"
    if head in lines:
        a = lines.index(head)
        b = next((i for i in range(a + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    else:
        goals = "## Goals missed in this run"
        a = b = lines.index(goals) if goals in lines else len(lines)
    return "\n".join(lines[:a] + block + lines[b:]).rstrip() + "\n"


def print_figures(name: str, res: dict[str, Any]) -> None:
    if res.get("error"):
        _log(f"[{name}] not measured: {res['error']}")
        return
    for f in res["figures"]:
        mark = "" if f["ok"] is None else ("  ok" if f["ok"] else "  MISSED " + f["goal"])
        _log(
            f"[{name}] {f['name']}: {f['ours']} | base {f['base']} | "
            f"ratio {_fmt(f['ratio'])} ({f['ratio_def']}){mark}"
        )


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repetitions and sizes")
    ap.add_argument("--sections", default=",".join(SECTIONS), help="comma-separated subset")
    ap.add_argument("--device", default="pocl", help="replay device (P:D or name substring)")
    ap.add_argument("--no-write", action="store_true", help="print only; leave BENCHMARKS.md")
    ap.add_argument("--json-out", type=Path, default=BENCH_TMP / "results.json")
    ap.add_argument(
        "--render-only",
        type=Path,
        metavar="JSON",
        help="measure nothing: rewrite BENCHMARKS.md from a --json-out file of an earlier run "
        "(and the H200 JSON found now)",
    )
    ap.add_argument(
        "--only",
        choices=SECTIONS,
        help="measure one section and rewrite only its block of BENCHMARKS.md",
    )
    ns = ap.parse_args(argv)
    if ns.only is not None:
        return run_only(ns.only, ns.quick, ns.device, ns.no_write, argv)
    if ns.render_only is not None:
        try:
            saved = json.loads(ns.render_only.read_text())
            text = render(
                saved["results"],
                saved["machine"],
                saved["command"],
                float(saved.get("total_s", 0.0)),
                saved["date"],
            )
        except (OSError, ValueError, KeyError, TypeError) as exc:
            print(f"run.py: cannot render from {ns.render_only}: {exc}", file=sys.stderr)
            return 2
        _write_report(text)
        _log(f"rewrote BENCHMARKS.md from {ns.render_only}")
        return 0
    chosen = [s.strip() for s in ns.sections.split(",") if s.strip()]
    unknown = [s for s in chosen if s not in SECTIONS]
    if unknown:
        print(
            f"run.py: unknown section(s) {', '.join(unknown)} ({', '.join(SECTIONS)})",
            file=sys.stderr,
        )
        return 2
    t_start = time.perf_counter()
    date = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    argv_text = list(argv) if argv is not None else sys.argv[1:]
    command = shlex.join([".venv/bin/python", "benchmarks/run.py", *argv_text])
    info = machine()
    _log(f"cltui benchmarks, {date}, on {info['CPU']} ({info['cores']} cores)")
    results: dict[str, Any] = {}
    try:
        heat2d = ensure_heat2d()
        synth = ensure_synth(heat2d) if ({"index", "tui"} & set(chosen)) else SYNTH
    except BenchError as exc:
        print(f"run.py: {exc}", file=sys.stderr)
        return 1
    os.environ["CLTUI_HEAT2D_DIR"] = str(heat2d)
    runners: dict[str, Callable[[], dict[str, Any]]] = {
        "index": lambda: section_index(heat2d, synth, ns.quick),
        "tui": lambda: section_tui(heat2d, synth, ns.quick),
        "replay": lambda: section_replay(ns.device, ns.quick),
        "compare": lambda: section_compare(ns.quick),
        "export": lambda: section_export(heat2d, ns.quick),
        "fleet": lambda: section_fleet(ns.quick),
        "pathological": lambda: section_pathological(ns.quick),
        "sources": lambda: section_sources(ns.quick),
    }
    for sec in SECTIONS:
        if sec not in chosen:
            continue
        t0 = time.perf_counter()
        _log(f"== {sec}")
        try:
            results[sec] = runners[sec]()
        except BenchError as exc:
            results[sec] = {"error": str(exc), "figures": []}
        except Exception as exc:  # a bug in one section must not lose the others
            results[sec] = {"error": f"{type(exc).__name__}: {exc}", "figures": []}
        results[sec]["seconds"] = time.perf_counter() - t0
        print_figures(sec, results[sec])
    total = time.perf_counter() - t_start
    _log(f"total {total:.0f} s")
    try:
        ns.json_out.parent.mkdir(parents=True, exist_ok=True)
        ns.json_out.write_text(
            json.dumps(
                {
                    "date": date,
                    "command": command,
                    "machine": info,
                    "total_s": total,
                    "results": results,
                },
                indent=1,
                default=str,
            )
        )
        _log(f"raw figures: {ns.json_out}")
    except OSError as exc:
        _log(f"cannot write {ns.json_out}: {exc}")
    if not ns.no_write:
        _write_report(render(results, info, command, total, date))
        _log("rewrote BENCHMARKS.md")
    return 0


def run_only(sec: str, quick: bool, device: str, no_write: bool, argv: Any) -> int:
    """``--only SEC``: one section, its JSON saved beside the others, its block spliced into
    BENCHMARKS.md."""
    t0 = time.perf_counter()
    date = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    argv_text = list(argv) if argv is not None else sys.argv[1:]
    command = shlex.join([".venv/bin/python", "benchmarks/run.py", *argv_text])
    _log(f"== {sec}")
    try:
        if sec == "pathological":
            res = section_pathological(quick)
        elif sec == "sources":
            res = section_sources(quick)
        elif sec in ("replay", "compare"):
            res = section_replay(device, quick) if sec == "replay" else section_compare(quick)
        elif sec == "fleet":
            res = section_fleet(quick)
        else:
            heat2d = ensure_heat2d()
            os.environ["CLTUI_HEAT2D_DIR"] = str(heat2d)
            synth = ensure_synth(heat2d) if sec in ("index", "tui") else SYNTH
            res = {
                "index": lambda: section_index(heat2d, synth, quick),
                "tui": lambda: section_tui(heat2d, synth, quick),
                "export": lambda: section_export(heat2d, quick),
            }[sec]()
    except BenchError as exc:
        res = {"error": str(exc), "figures": []}
    res["seconds"] = time.perf_counter() - t0
    print_figures(sec, res)
    try:
        BENCH_TMP.mkdir(parents=True, exist_ok=True)
        (BENCH_TMP / f"results-{sec}.json").write_text(
            json.dumps({"date": date, "command": command, "results": {sec: res}}, default=str)
        )
    except OSError as exc:
        _log(f"cannot write the raw figures: {exc}")
    if not no_write:
        md = ROOT / "BENCHMARKS.md"
        old = md.read_text() if md.is_file() else ""
        md.write_text(splice_section(old, sec, res, f"{date} with `{command}`"))
        _log(f"rewrote the {SECTION_TITLES[sec]} section of BENCHMARKS.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
