"""The bad-input campaign as a standing test (the harness: ``tests/fuzz_mutations.py``).

A few hundred named mutations of small shared captures (29 kinds; FIFOs, links to devices and
sockets among them), seeded, each read as ``ls``, ``show`` (``--json`` too), ``info`` and a
whole-range replay plan would, each in a worker process under a deadline: no traceback, no
hang, nothing read from outside the capture.  A failure prints every finding's signature with
``capture kind seed``; replay one with ``python benchmarks/fuzz_long.py --repro 'CAPTURE KIND
SEED'``.  The long run (100,000 inputs) is ``benchmarks/fuzz_long.py``.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from . import fuzz_mutations as fm
from .conftest import capture_path

SEED = 20261202
INPUTS = 7 * len(fm.KINDS)  # 203: every kind 7 times
DEADLINE = 20.0  # seconds per input; an intact one takes ~0.05 s here


@pytest.fixture(scope="module", autouse=True)
def _captures() -> None:
    for name in fm.BASES:
        capture_path(name)  # skips when the shared captures are not there


def test_specs_are_deterministic_and_cover_every_kind_and_capture() -> None:
    a = list(fm.specs(INPUTS, SEED))
    assert a == list(fm.specs(INPUTS, SEED))
    assert {s.kind for s in a} == set(fm.KINDS)
    assert {s.capture for s in a} == set(fm.BASES)
    assert len({s.seed for s in a}) == len(a)


@pytest.mark.parametrize("kind", fm.KINDS)
def test_each_kind_changes_the_capture_and_restore_undoes_it(kind: str, tmp_path: Path) -> None:
    ws = fm.Workspace(fm.Base.load("images_svm_pocl"), tmp_path / "cap")
    before = ws.listing()
    digest = _digest(ws.root)
    changed = 0
    for seed in range(5):
        fm.mutate(ws, kind, random.Random(seed))
        changed += _digest(ws.root) != digest
        ws.restore()
        assert ws.listing() == before, (kind, seed)
        assert _digest(ws.root) == digest, (kind, seed)
    assert changed >= 4, f"{kind} left the capture as it was in {5 - changed} of 5 tries"


def _digest(root: Path) -> int:
    import hashlib
    import os

    h = hashlib.sha1()
    for dirpath, dirnames, filenames in sorted(os.walk(root)):
        for n in sorted(dirnames + filenames):
            p = os.path.join(dirpath, n)
            h.update(os.fsencode(p))
            if os.path.islink(p):
                h.update(b"->" + os.fsencode(os.readlink(p)))
            elif os.path.isfile(p):
                with open(p, "rb") as f:
                    h.update(f.read())
    return int.from_bytes(h.digest()[:8], "big")


def test_the_checks_can_fail(tmp_path: Path) -> None:
    """The oracle sees a read outside the capture and an exception wrapped into a problem."""
    ws = fm.Workspace(fm.Base.load("images_svm_pocl"), tmp_path / "cap")
    assert fm.exercise(ws.root) == []
    (tmp_path / "cap" / "clintercept_log.txt").unlink()
    for f in (tmp_path / "cap").iterdir():
        if f.name.endswith("_options.txt"):
            f.write_text(f"-I {fm.OUTSIDE_MARKER}\n")
    found = fm.exercise(ws.root)
    assert [f.what for f in found] == ["outside"], found
    assert fm._WRAPPED.search("x: cannot open capture: OverflowError: int too large")
    assert fm._WRAPPED.search("could not decode this enqueue: KeyError: 3")


@pytest.mark.child
def test_fuzz_campaign() -> None:
    summary = fm.run_campaign(
        fm.specs(INPUTS, SEED), workers=2, deadline=DEADLINE, verify=True, max_hangs=2, seed=SEED
    )
    assert summary.clean, "\n" + summary.report()
    assert summary.inputs == INPUTS, summary.report()
    assert set(summary.per_kind) == set(fm.KINDS), summary.report()
    assert set(summary.per_capture) == set(fm.BASES), summary.report()
