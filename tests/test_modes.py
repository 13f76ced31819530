"""The plan modes' rule (cltui.replay.modes) as a truth table: every row written out."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from cltui.replay.modes import MODES, InputRule, input_rule, input_source, is_mode


@pytest.mark.parametrize(
    ("mode", "first_use", "transfers", "source"),
    [
        ("chain", True, False, "fresh"),
        ("chain", True, True, "fresh"),
        ("chain", False, False, "carried"),
        ("chain", False, True, "transfers"),
        ("strict", True, True, "fresh"),
        ("strict", False, False, "carried"),
        ("strict", False, True, "transfers"),
        ("isolated", True, False, "fresh"),
        ("isolated", False, False, "fresh"),
        ("isolated", False, True, "fresh"),
    ],
)
def test_source(mode: str, first_use: bool, transfers: bool, source: str) -> None:
    assert input_source(mode, first_use=first_use, transfers=transfers) == source


R = InputRule
# (mode, source, pre, transfers_replayable, previous_post, changed) -> rule
TABLE = [
    # fresh: the captured Pre dump is the input, in every mode
    ("chain", "fresh", "raw", False, True, False, R(load="input")),
    ("strict", "fresh", "raw", False, True, False, R(load="input")),
    ("isolated", "fresh", "raw", False, True, False, R(load="input")),
    ("chain", "fresh", "hash", False, True, False, R()),  # zero-filled, with a note
    ("isolated", "fresh", "none", False, True, False, R()),
    # transfers the plan can replay: replayed, then compared; chain reloads if it differs
    ("chain", "transfers", "raw", True, True, False, R("verify", True, "replay")),
    ("strict", "transfers", "raw", True, True, False, R(None, True, "replay")),
    ("chain", "transfers", "hash", True, True, False, R(None, True, "replay")),
    ("chain", "transfers", "none", True, True, False, R(None, False, "replay")),
    # transfers it cannot replay: chain reloads the captured state, strict leaves it
    ("chain", "transfers", "raw", False, True, False, R("reload", True, "reload")),
    ("strict", "transfers", "raw", False, True, False, R(None, True, "none")),
    ("chain", "transfers", "hash", False, True, False, R(None, True, "unreplayed")),
    ("strict", "transfers", "hash", False, True, False, R(None, True, "unreplayed")),
    ("chain", "transfers", "none", False, True, False, R(None, False, "unreplayed")),
    # carried, nothing logged: unchanged is nothing to do; a change is reloaded in chain only
    ("chain", "carried", "raw", False, True, False, R()),
    ("chain", "carried", "raw", False, True, True, R("reload", True, "reload")),
    ("strict", "carried", "raw", False, True, True, R(None, True, "none")),
    ("chain", "carried", "hash", False, True, True, R(None, True, "unreplayed")),  # no bytes
    ("chain", "carried", "none", False, True, True, R()),  # no Pre dump: no change seen
    ("strict", "carried", "hash", False, True, True, R(None, True, "none")),
    # carried, the capture has no Post dump of the last use: verify against this Pre
    ("chain", "carried", "raw", False, False, False, R("verify", True, None)),
    ("strict", "carried", "raw", False, False, False, R(None, True, None)),
    ("chain", "carried", "hash", False, False, False, R()),
    ("chain", "carried", "none", False, False, False, R()),
]


@pytest.mark.parametrize(("mode", "source", "pre", "repl", "post", "changed", "rule"), TABLE)
def test_rule(
    mode: str, source: str, pre: str, repl: bool, post: bool, changed: bool, rule: InputRule
) -> None:
    got = input_rule(
        mode,
        source,  # type: ignore[arg-type]
        pre=pre,  # type: ignore[arg-type]
        transfers_replayable=repl,
        previous_post=post,
        changed=changed,
    )
    assert got == rule


def test_invariants_over_every_combination() -> None:
    """Whatever the facts: isolated never reaches past its Pre dump, strict never reloads,
    a load needs the Pre dump's bytes, and a reload is always checked first."""
    for mode, source, pre, repl, post, changed in itertools.product(
        MODES, ("fresh", "transfers", "carried"), ("none", "hash", "raw"),
        (False, True), (False, True), (False, True),
    ):  # fmt: skip
        rule = input_rule(
            mode, source, pre=pre, transfers_replayable=repl, previous_post=post, changed=changed
        )
        if rule.load is not None:
            assert pre == "raw"
        if mode == "strict":
            assert rule.load in (None, "input") and rule.action != "reload"
        if rule.load in ("verify", "reload"):
            assert mode == "chain" and rule.precheck
        if source == "fresh":
            assert rule.action is None and not rule.precheck


@pytest.mark.parametrize(("hashes", "action"), [(False, "reload"), (True, "unreplayed")])
def test_chain_plan_follows_the_rule_on_a_host_change(
    tmp_path: Path, hashes: bool, action: str
) -> None:
    """A buffer the host changes unlogged between two kernels: with Pre bytes chain reloads
    it; with only hash dumps it cannot, and the checks after it say so (a hash file is never
    loaded as a buffer's contents)."""
    from cltui.capture import open_capture
    from cltui.capture.ranges import parse_range
    from cltui.replay.plan import build_plan
    from tests.analysis_synth import chain_capture, write_capture

    spec = chain_capture(host_write_at=3)
    spec.hashes, spec.replay = hashes, False
    root = write_capture(spec, tmp_path / "cap")
    plan = build_plan(open_capture(root), parse_range("2-3"), mode="chain")
    changes = [c for c in plan.changes if c["enqueue"] == 3]
    assert [c["action"] for c in changes] == [action]
    step = next(s for s in plan.manifest["steps"] if s["enqueue"] == 3)
    mid = changes[0]["mem"]
    reloads = [ld for ld in step["loads"] if ld["mem"] == mid]
    assert [ld["why"] for ld in reloads] == (["reload"] if not hashes else [])
    tainted = [c for c in step["checks"] if c.get("after_unreplayed") is not None]
    assert bool(tainted) == hashes


def test_is_mode_names_exactly_the_three_modes() -> None:
    assert [m for m in ("chain", "isolated", "strict", "Chain", "", "chain ") if is_mode(m)] == [
        *MODES
    ]
