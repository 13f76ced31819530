"""The plan modes' rule: what a replay does with a memory object before a kernel uses it.

``chain`` replays the range as one run and puts the captured state back wherever the capture
shows the host changed it (a write, a fill, a copy the plan cannot replay); ``isolated``
starts every kernel from its own captured inputs; ``strict`` replays the range as one run and
never reloads: what the host did and the range does not replay shows up as differences.

This module is the rule alone, as two pure functions over plain facts; the plan builder
(:mod:`cltui.replay.plan`) gathers the facts and carries the decisions out.  A truth-table
test holds every row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeGuard

__all__ = ["MODES", "InputRule", "Mode", "Source", "input_rule", "input_source", "is_mode"]

Mode = Literal["chain", "isolated", "strict"]
MODES: tuple[Mode, ...] = ("chain", "isolated", "strict")

# where an object's state before a kernel comes from:
#   fresh: its captured Pre dump (first use in the range, or isolated mode)
#   transfers: the state the range left, then host transfers the log shows since its last use
#   carried: the state the range left, nothing logged in between
Source = Literal["fresh", "transfers", "carried"]


@dataclass(frozen=True, slots=True)
class InputRule:
    """What to do before the kernel.

    ``load``: the why of a load of the captured Pre dump (``input``: the starting state;
    ``verify``: compared first, loaded only if it differs; ``reload``: loaded), None for none.
    ``precheck``: compare the replayed state with the captured Pre dump before the kernel.
    ``action``: the host-change record's action (``replay``: the transfers are replayed,
    ``reload``, ``none``: left as replayed, ``unreplayed``: not replayed and not reloaded),
    None when there is no host change to record.
    """

    load: Literal["input", "verify", "reload"] | None = None
    precheck: bool = False
    action: Literal["replay", "reload", "none", "unreplayed"] | None = None


def is_mode(text: str) -> TypeGuard[Mode]:
    """``text`` names a mode."""
    return text in MODES


def input_source(mode: str, *, first_use: bool, transfers: bool) -> Source:
    """Where the state of an object comes from before a kernel of the range uses it."""
    if first_use or mode == "isolated":
        return "fresh"
    return "transfers" if transfers else "carried"


def input_rule(
    mode: str,
    source: Source,
    *,
    pre: Literal["none", "hash", "raw"],
    transfers_replayable: bool = False,
    previous_post: bool = True,
    changed: bool = False,
) -> InputRule:
    """The rule for one object before one kernel.

    ``pre``: the captured Pre dump of the object at this kernel (none, only its hash, its
    bytes); ``transfers_replayable``: every logged transfer since its last use can be
    replayed (source ``transfers``); ``previous_post``: the capture has the object's Post
    dump after its last use in the range; ``changed``: that Post dump and this Pre dump
    differ (source ``carried``).  A load needs the Pre dump's bytes: with only its hash, a
    change chain cannot put back is ``unreplayed`` (checks after it are marked).
    """
    chain = mode == "chain"
    raw = pre == "raw"
    if source == "fresh":
        return InputRule(load="input" if raw else None)
    if source == "transfers":
        if transfers_replayable:
            return InputRule(
                load="verify" if raw and chain else None, precheck=pre != "none", action="replay"
            )
        if raw and chain:
            return InputRule(load="reload", precheck=True, action="reload")
        return InputRule(
            precheck=pre != "none", action="none" if mode == "strict" and raw else "unreplayed"
        )
    if not previous_post and raw:  # what the last use left is unknown: verify it
        return InputRule(load="verify" if chain else None, precheck=True)
    if changed and pre != "none":
        if not chain:
            return InputRule(precheck=True, action="none")
        if raw:
            return InputRule(load="reload", precheck=True, action="reload")
        # a hash shows the change but holds no bytes to reload: what follows is tainted
        return InputRule(precheck=True, action="unreplayed")
    return InputRule()
