"""A sweep's CSV, SVG and text bars (pure): the fastest correct time per value of each
dimension, the options baseline as ``none``, well-formed XML whatever the labels hold."""

from __future__ import annotations

import csv
import io
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from cltui.replay.experiment.runs import summarize
from cltui.replay.experiment.sweep import SweepSpec, point_id, points, row_of
from cltui.replay.experiment.sweep_plot import bars_text, csv_text, per_value, svg_text


def _summary(tmp_path: Path) -> dict[str, Any]:
    spec = SweepSpec("8", options=("-DX=<&>\x1b[31m",), params=(("WGS", ("64", "128", "256")),))
    pts = points(spec)
    rows = []
    for k, v in enumerate(pts):
        wgs = dict(v.params).get("WGS")
        ms = {"64": 3000, "128": 2000, "256": 1000}.get(wgs or "", 2500)
        ms += 100 if v.options_add else 0
        status = "fail" if wgs == "256" and v.options_add else "pass"
        rows.append(row_of(point_id(v), v, "1:0", {"status": status, "line": "FAIL: 1 output"},
                           None, [ms + i % 3 for i in range(9)], None))  # fmt: skip
        assert k < 10
    return summarize(spec, tmp_path, pts, rows, ["1:0"], None, 0, None, None, False)  # type: ignore[arg-type]


def test_time_per_value_csv_svg_and_bars(tmp_path: Path) -> None:
    summary = _summary(tmp_path)
    capture, dims = per_value(summary)
    assert capture == 2501
    assert dims == [("WGS", [("64", 3001.0), ("128", 2001.0), ("256", 1001.0)]),
                    ("options", [("none", 1001.0), ("-DX=<&>\x1b[31m", 2101.0)])]
    table = list(csv.DictReader(io.StringIO(csv_text(summary))))
    assert len(table) == 7  # the capture and 2 x 3 points
    assert {r["options"] for r in table} == {"", "none", "-DX=<&>\x1b[31m"}
    assert [r["status"] for r in table if r["WGS"] == "256"] == ["pass", "fail"]
    assert table[0]["point"] == "capture" and table[0]["median_ns"] == "2501"
    svg = svg_text(summary)
    root = ET.fromstring(svg)  # well-formed: <, & and an escape sequence in a label
    assert "\x1b" not in svg and "-DX=&lt;&amp;&gt;\\x1b[31m" in svg
    assert root.tag.endswith("svg")
    bars = bars_text(summary, width=10)
    assert bars[1].startswith("capture") and bars[1].endswith("2.5 µs")
    width = len("-DX=<&>\\x1b[31m")  # the value shown escaped, the column as wide
    assert f"WGS     {'64':>{width}} {'█' * 10} 3 µs" in bars, bars
    assert f"{'':<7} {'256':>{width}} {'███▍':<10} 1 µs" in bars, bars
    assert f"{'':<7} -DX=<&>\\x1b[31m {'███████':<10} 2.1 µs" in bars, bars
