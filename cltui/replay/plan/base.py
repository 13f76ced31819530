"""The plan builder's state, typed once: what its parts (programs, memory, arguments, checks,
transfers, inputs, steps) read and set, the data keys of the files the plan reads, and the
``Replay/`` folders read once per enqueue."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from cltui.capture.capture import Capture
from cltui.capture.model import Dump, Enqueue, KernelArg
from cltui.capture.replayfolder import ReplayFolder, read_replay_folder
from cltui.replay.engine.compare import Tolerance
from cltui.replay.engine.dtypes import DTypeSpec
from cltui.replay.engine.schema import (
    ArgTolerance,
    Change,
    CheckSpec,
    DataRef,
    LoadSpec,
    LostRun,
    MemorySpec,
    ProgramSpec,
    ScopeKernel,
    ScopeTransfer,
    Skipped,
    StepSpec,
    TransferSpec,
)
from cltui.replay.modes import Mode


@dataclass
class Pending:
    """A host transfer the log shows, waiting for the next step that uses its object:
    ``spec`` (shared with the step's ``transfers`` list, where it has an operation) and the
    builder's own facts about it (not in the plan)."""

    spec: TransferSpec
    runnable: bool  # can be replayed as an operation (so far)
    deps: list[Pending] = field(default_factory=list)  # the source's pending transfers


@dataclass
class ScopeEntry:
    """A kernel enqueue of the range in the plan's ``scope`` (``why``: when it is skipped)."""

    enqueue: int
    kernel: str
    replayed: bool = False
    recovered: bool = False
    why: str | None = None

    def to_json(self) -> ScopeKernel:
        """The scope entry (``recovered`` and ``why`` only when they say something)."""
        out: ScopeKernel = {
            "enqueue": self.enqueue,
            "kernel": self.kernel,
            "replayed": self.replayed,
        }
        if self.recovered:
            out["recovered"] = True
        if self.why is not None:
            out["why"] = self.why
        return out


@dataclass
class Obj:
    """One memory object at one step: the arguments naming it and what the capture has."""

    mid: str
    margs: list[KernelArg]
    label: str  # "arg 2 (buffer 0007)"
    pre: Dump | None
    post: Dump | None
    dspec: DTypeSpec | None
    shape: list[int] | None
    # why a damaged dump (cut short, emptied) is not ``pre``/``post``: never loaded or compared
    pre_damage: str | None = None
    post_damage: str | None = None

    @property
    def indices(self) -> list[int]:
        return [a.index for a in self.margs]


@dataclass
class StepIO:
    """What one step loads before it, pre-checks and checks after it."""

    loads: list[LoadSpec] = field(default_factory=list)
    prechecks: list[CheckSpec] = field(default_factory=list)
    checks: list[CheckSpec] = field(default_factory=list)


class PlanState:
    """The builder's state; every part is a set of functions over it."""

    def __init__(
        self, cap: Capture, mode: Mode, tolerance: Tolerance, arg_tol: ArgTolerance
    ) -> None:
        self.cap = cap
        self.root = Path(cap.path)
        self.mode: Mode = mode
        self.tol = tolerance
        self.arg_tol = arg_tol
        self.data: dict[str, DataRef] = {}
        self.programs: dict[str, ProgramSpec] = {}
        self.memory: dict[str, MemorySpec] = {}
        self.steps: list[StepSpec] = []
        self.notes: list[str] = []
        self.changes: list[Change] = []
        # mem id -> (enqueue of the last step touching it, its captured Post dump or None)
        self.state: dict[str, tuple[int, Dump | None]] = {}
        self._replays: dict[int, ReplayFolder] = {}
        # host-side transfers seen in the log (see ``transfers.transfer``): per memory id
        # the ones since its last step, the ops waiting for the next step, the scope entries
        # (one per transfer that changes an object a later step uses), and per memory id
        # the enqueue of the unreplayed transfer its replayed state follows
        self.pending: dict[str, list[Pending]] = {}
        self.queued_ops: list[TransferSpec] = []
        self.transfers: dict[int, ScopeTransfer] = {}
        self.taint: dict[str, int] = {}
        # per memory id, why its replayed state is unknown (a damaged or missing Pre dump it
        # started from, or an unknown input of the kernel that wrote it): its checks are
        # unchecked, with the reason, until a Pre dump is loaded into it
        self.unknown: dict[str, str] = {}
        self.kernels: list[ScopeEntry] = []
        self.skipped: list[Skipped] = []
        self.lost: list[LostRun] = []

    def replay(self, enq: Enqueue) -> ReplayFolder | None:
        """The enqueue's ``Replay/`` folder (read once)."""
        if enq.replay_dir is None:
            return None
        if enq.number not in self._replays:
            self._replays[enq.number] = read_replay_folder(enq.replay_dir)
        return self._replays[enq.number]

    def key(self, path: Path) -> str:
        """The data key of a file the plan reads (its name inside the capture)."""
        try:  # the name inside the capture, links not followed (the exporter refuses them)
            rel = str(path.relative_to(self.root))
        except ValueError:
            try:
                rel = str(path.resolve().relative_to(self.root.resolve()))
            except ValueError:
                rel = str(path)
        if rel not in self.data:
            try:
                size = path.stat().st_size
            except OSError:
                size = 0
            self.data[rel] = {"path": rel, "size": size}
        return rel
