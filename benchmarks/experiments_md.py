"""BENCHMARKS.md's section of ``bench_experiments.py``, rendered from its results JSON and
written in place (the other sections stay where they are).

    .venv/bin/python benchmarks/experiments_md.py [RESULTS.json]
"""

from __future__ import annotations

import json
import re
import sys
import textwrap
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "experiments_pocl.json"
TITLE = "## Experiments: sweep throughput and the A/B interval (PoCL)"

ROWS = [
    ("small", "small kernel (23 axpb), 8 local sizes x 2 options"),
    ("small_65", "small kernel, x 4 defines (65 builds)"),
    ("chain", "10-kernel chain (22-31), 4 local sizes x 2 options"),
]


def _verdict(value: float | None, goal: float) -> str:
    if value is None:
        return "-"
    shown = f"{value:.0f}" if value >= 10 else f"{value:.2f}"
    return f"{shown} {'met' if value >= goal else '**MISSED**'}"


def _wrap(paragraph: str) -> list[str]:
    """A paragraph of prose at 100 columns, as the rest of BENCHMARKS.md."""
    return [*textwrap.wrap(paragraph, 100, break_on_hyphens=False), ""]


def _rate(value: float | None) -> str:
    return "-" if value is None else (f"{value:.1f}/s" if value < 100 else f"{value:.0f}/s")


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value * 1000:.0f} ms"


def _sweep_rows(res: dict[str, Any]) -> list[str]:
    out = [
        "| sweep | configs | cltui steady | loop steady | ratio (goal >= 0.8) | cltui end to end "
        "| loop end to end | ratio (goal >= 0.8) | one process per config | steady ratio "
        "(goal >= 20) | end-to-end ratio (goal >= 20) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for key, label in ROWS:
        r = res.get(key)
        if r is None:
            continue
        st, ee = r["steady_configs_per_s"], r["end_to_end_configs_per_s"]
        out.append(
            f"| {label} | {r['configs']} | {_rate(st['cltui'])} | {_rate(st['loop'])} | "
            f"{_verdict(r['steady_vs_loop'], 0.8)} | {_rate(ee['cltui'])} | {_rate(ee['loop'])} "
            f"| {_verdict(r['end_to_end_vs_loop'], 0.8)} | {_rate(ee['per_process'])} | "
            f"{_verdict(r['steady_vs_per_process'], 20)} | "
            f"{_verdict(r['end_to_end_vs_per_process'], 20)} |"
        )
    return out


def _startup_rows(res: dict[str, Any]) -> list[str]:
    """Before the first row, and end to end, per side (with the earlier commit's, when run)."""
    before = any("before" in (res.get(k) or {}).get("best", {}) for k, _ in ROWS)
    head = "| sweep | cltui: first row | loop: first row | cltui: whole | loop: whole |"
    sep = "|---|---|---|---|---|"
    if before:
        head = head.replace("| cltui: whole", "| before: first row | cltui: whole")
        head += " before: whole | before / loop (end to end) |"
        sep += "---|---|---|"
    out = [head, sep]
    for key, label in [*ROWS, ("replay", "`cltui replay` 23 (one configuration)")]:
        r = res.get(key)
        if r is None or "best" not in r:
            continue
        b = r["best"]
        cells = [label, _ms(b["cltui"]["first_row_s"]), _ms(b["loop"]["first_row_s"])]
        if before:
            cells.append(_ms(b.get("before", {}).get("first_row_s")))
        cells += [_ms(b["cltui"]["wall_s"]), _ms(b["loop"]["wall_s"])]
        if before:
            bw = b.get("before", {}).get("wall_s")
            cells += [_ms(bw), f"{b['loop']['wall_s'] / bw:.2f}" if bw else "-"]
        out.append("| " + " | ".join(cells) + " |")
    return out


def render(res: dict[str, Any]) -> str:
    run = res.get("run", {})
    load = " ".join(f"{x:.2f}" for x in run.get("load", [])) or "?"
    out = [
        TITLE, "",
        *_wrap("`benchmarks/bench_experiments.py` (not part of `run.py`; run "
        f"{run.get('date', '?')} on this 2-core shared machine, load {load} at the end; raw "
        "JSON in "
        "`benchmarks/results/experiments_pocl.json`; this section is written by "
        "`benchmarks/experiments_md.py`). `cltui sweep` (a subprocess, start to end) against a "
        "hand-written pyopencl loop (one subprocess) that builds and runs the same "
        "configurations (the sweep's own plans as JSON: per configuration the programs built "
        "once per (source, options), the buffers created and uploaded, the arguments set, one "
        "run with a read-back and comparison after each kernel, then 9 timed runs with the "
        "inputs restored; then, as the sweep confirms its best, the three fastest correct "
        "configurations again beside the capture's own, checked, then timed in turns), and "
        "against one process per configuration (the same loop, a fresh python each, without "
        "the confirmation). Each side warmed twice, then the best of "
        f"{run.get('turns', 3)}, the sides taking turns, "
        "with Python's bytecode cache on (as an installed cltui). *Steady* is configurations "
        "per second between the first and the last row (start-up left out); *end to end* "
        "counts the whole process."),
        *_sweep_rows(res), "",
        *_wrap(f"Start-up, the best of {run.get('turns', 3)} (*first row*: from the process's "
               "start to its first configuration's line; *before*: the commit before this "
               f"run's change, {run.get('before_rev', 'when run')}, in the same turns):"),
        *_startup_rows(res), "",
    ]  # fmt: skip
    rep = res.get("replay")
    if rep:
        out += _wrap(
            f"`cltui replay CAPTURE 23 -d pocl` (the same start-up, one run with its checks): "
            f"{_ms(rep['best']['cltui']['wall_s'])} against the loop's "
            f"{_ms(rep['best']['loop']['wall_s'])} running that plan once (ratio "
            f"{rep['vs_loop']:.2f}"
            + (f"; before: {rep['before_vs_loop']:.2f}" if "before_vs_loop" in rep else "")
            + ")."
        )  # fmt: skip
    for note in res.get("notes", []):
        out += _wrap(note)
    aa = res.get("a_vs_a")
    if aa:
        out += _wrap(
            "A against A (`cltui try` machinery: one child, the range's plan as A and as an "
            "unchanged B, validated, then 29 timed runs each in turns A B B A ..., 95 % "
            f"bootstrap interval of the median paired difference of the range's device time), on "
            f"{aa['range']}: over **{aa['trials']} trials the interval held zero in "
            f"{aa['held_zero'] * 100:.1f} %** (goal >= 95 %: "
            f"{'met' if aa['held_zero'] >= 0.95 else '**MISSED**'}; median interval width "
            f"{aa['median_relative_width'] * 100:.1f} % of the range's time)."
            + (" " + aa["note"] if aa.get("note") else "")
        )  # fmt: skip
    return "\n".join(out).rstrip() + "\n"


def write_section(res: dict[str, Any], path: Path = ROOT / "BENCHMARKS.md") -> None:
    """Replace the section titled :data:`TITLE` in ``path`` (appended when absent)."""
    text = path.read_text() if path.exists() else ""
    parts = re.split(r"(?m)^(?=## )", text)
    new = render(res)
    for i, part in enumerate(parts):
        if part.split("\n", 1)[0].strip() == TITLE:
            parts[i] = new + "\n"
            break
    else:
        parts.append(("\n" if text and not text.endswith("\n\n") else "") + new)
    path.write_text("".join(parts).rstrip("\n") + "\n")


if __name__ == "__main__":
    write_section(json.loads(Path(sys.argv[1] if len(sys.argv) > 1 else RESULTS).read_text()))
