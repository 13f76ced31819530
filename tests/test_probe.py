"""The nondeterminism probe (``replay --repeat N --probe``)."""

from __future__ import annotations

import numpy as np

from cltui.analysis.probe import OutputMeta, probe_outputs


def test_probe_flags_only_the_outputs_that_vary() -> None:
    a = np.arange(16, dtype=np.float32)
    b = a.copy()
    b[5] = np.nextafter(b[5], np.float32(100))  # 1 ULP up
    ints = np.arange(8, dtype=np.int32)
    runs = [
        {(3, "m1"): a.copy(), (3, "m2"): ints.copy(), (4, "m1"): a.copy()},
        {(3, "m1"): b.copy(), (3, "m2"): ints.copy(), (4, "m1"): a.copy()},
        {(3, "m1"): a.copy(), (3, "m2"): ints.copy(), (4, "m1"): a.copy()},
    ]
    meta = {(3, "m1"): OutputMeta("k", "arg 0 (buffer 0001)", (0,), "<f4")}
    rep = probe_outputs(runs, meta)
    assert rep.runs == 3 and rep.outputs == 3 and not rep.deterministic
    assert len(rep.varying) == 1
    v = rep.varying[0]
    assert (v.enqueue, v.mem, v.variants, v.first_run) == (3, "m1", 2, 1)
    assert v.result.n_diff == 1 and v.result.max_ulp == 1
    assert v.result.first is not None and v.result.first.index == 5
    assert rep.varying_args() == {3: [0]}
    assert "2 different results in 3 runs" in v.summary()


def test_probe_reports_outputs_missing_from_a_run() -> None:
    x = np.zeros(4, dtype=np.uint8)
    rep = probe_outputs([{(1, "m"): x}, {}])
    assert rep.deterministic and rep.missing == ["enqueue 1 m: read back in 1 of 2 runs"]
