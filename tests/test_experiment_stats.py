"""The A/B statistics (pure): a result only beyond the noise floor, "within noise" without a
percentage, the per-step rows' Bonferroni-wide intervals, and the per-device A/A floor kept
in the cache (read with a bound, a damaged entry ignored)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cltui.replay.experiment import noise
from cltui.replay.experiment.report import diff_text
from cltui.replay.experiment.stats import (
    NO_DIFFERENCE,
    family_level,
    paired,
    relative_text,
    unpaired,
)

DEV = {"id": "1:0", "name": "cpu", "platform": "Portable Computing Language", "driver": "3.1"}


def _samples(shift: float, n: int = 40, seed: int = 3) -> tuple[list[float], list[float]]:
    """A around 1000 ns, B = A + ``shift`` (a fraction of A) with its own noise."""
    gen = np.random.default_rng(seed)
    a = 1000.0 + gen.normal(0.0, 5.0, n)
    b = a * (1.0 + shift) + gen.normal(0.0, 5.0, n)
    return list(a), list(b)


def test_a_real_change_below_the_floor_is_within_noise() -> None:
    a, b = _samples(0.03)
    assert paired(a, b)["reading"] == "slower"  # its interval excludes zero
    d = paired(a, b, min_effect=0.05)
    assert d["reading"] == NO_DIFFERENCE == "within noise"
    assert d["min_effect"] == 0.05
    assert relative_text(d) == ""  # no percentage beside within noise
    assert "%" not in diff_text(d).split("(")[0] and "noise floor" in diff_text(d)
    assert paired(a, b, min_effect=0.02)["reading"] == "slower"
    assert relative_text(paired(a, b, min_effect=0.02)).startswith(" (+")
    assert unpaired(a, b, min_effect=0.05)["reading"] == NO_DIFFERENCE


def test_a_no_op_change_is_within_noise() -> None:
    a, b = _samples(0.0)
    assert paired(a, b, min_effect=0.01)["reading"] == NO_DIFFERENCE


def test_the_step_rows_are_a_family() -> None:
    assert family_level(1) == pytest.approx(0.95)
    assert family_level(10) == pytest.approx(0.995)
    a, b = _samples(0.004, n=30)
    one, family = paired(a, b), paired(a, b, level=family_level(10))
    assert family["level"] == pytest.approx(0.995)
    assert family["lo"] is not None and one["lo"] is not None
    assert family["hi"] is not None and one["hi"] is not None
    assert family["lo"] <= one["lo"] and family["hi"] >= one["hi"]
    assert "99.5% interval" in diff_text(family)


def test_the_floor_is_kept_per_device(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLTUI_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("CLTUI_BINARY_CACHE", raising=False)
    assert noise.lookup(DEV) is None  # type: ignore[arg-type]
    a, b = _samples(0.0)
    floor = noise.floor_of(paired(a, b), "22-31", 30)
    assert floor is not None and noise.FLOOR_MIN <= floor["min_effect"] < 0.05
    noise.store(DEV, floor)  # type: ignore[arg-type]
    assert noise.lookup(DEV) == floor  # type: ignore[arg-type]
    other = {**DEV, "driver": "4.0"}
    assert noise.lookup(other) is None  # type: ignore[arg-type]
    path = noise.noise_path()
    assert path is not None and path.parent == tmp_path
    path.write_text('{"' + noise.device_key(DEV) + '": {"min_effect": "x"}}')  # type: ignore[arg-type]
    assert noise.lookup(DEV) is None  # type: ignore[arg-type]
    path.write_text("not json")
    assert noise.lookup(DEV) is None  # type: ignore[arg-type]
    monkeypatch.setenv("CLTUI_BINARY_CACHE", "0")
    assert noise.noise_path() is None and noise.lookup(DEV) is None  # type: ignore[arg-type]
