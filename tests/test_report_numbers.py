"""A report whose numbers have thousands of digits is read with problems, never a ValueError.

Found by the fuzz campaign (``tests/fuzz_mutations.py``, kind ``long_word``): a 150,000-digit
word in ``clintercept_report.txt``'s ``Total Time (ns)`` made ``int()`` refuse it (Python's
4,300-digit limit), so the capture did not open at all.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cltui.capture import open_capture
from cltui.capture.files.report import parse_report_text

from .conftest import capture_path, copy_capture

HUGE = "9" * 150_000


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        (f"Total Enqueues: {HUGE}", "unreadable Total Enqueues"),
        (f"Total Time (ns): {HUGE}", "unreadable Total Time"),
        (f"  clFinish,      1,  {HUGE},    0.00%,  191,  191,  191", "unreadable timing row"),
        (f"  clFinish,      1,  191,    0.00%,  191,  191,  {'9' * 31}", "unreadable timing row"),
    ],
)
def test_huge_numbers_are_unreadable_lines(line: str, problem: str) -> None:
    head = "" if line.startswith("Total Enqueues") else "Total Enqueues: 3\n"
    text = f"{head}\nHost Performance Timing Results:\n\n{line}\n"
    rep = parse_report_text(text.encode())
    assert any(problem in p.message for p in rep.problems), rep.problems


def test_huge_device_heading_and_histogram() -> None:
    text = (
        "Total Enqueues: 3\n\n"
        f"Device Performance Timing Results for cpu ({HUGE}CUs, 1MHz):\n\n"
        "Device Performance Timing Histogram for k:\n"
        f"  < {HUGE} ns: 3 : ###\n"
    ).encode()
    rep = parse_report_text(text)
    assert rep.total_enqueues == 3
    assert any("histogram row" in p.message for p in rep.problems)


def test_capture_with_a_huge_report_number_opens(tmp_path: Path) -> None:
    cap_dir = copy_capture(capture_path("images_svm_pocl"), tmp_path)
    rp = cap_dir / "clintercept_report.txt"
    rp.write_text(rp.read_text().replace("Total Time (ns): ", f"Total Time (ns): {HUGE}", 1))
    cap = open_capture(cap_dir)
    try:
        assert len(cap) == 11
    finally:
        cap.close()
