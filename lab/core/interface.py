"""The small interface between the lab and the pieces students write (`exercises/`, answered in `solutions/`),
and the one table of those pieces (EXERCISES, at the end): everything else that lists them is derived from it.

The replica, the write-ahead log and the simulator call these functions through an `Impl` (see `lab.core.impl`),
never a module directly, so `--impl solutions`, `--impl exercises` or any module with the same names can be
plugged in. Each function is pure: it decides, the caller applies.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Sequence

from lab.core.messages import Entry

__all__ = ["Entry", "LogView", "AppendResult", "SegmentInfo", "TruncationPlan", "Function", "Exercise", "EXERCISES",
           "FUNCTIONS", "EXERCISE_OF"]


class LogView(Protocol):
    """Read-only view of a node's log. Indexes start at 1; index 0 is the empty prefix (generation 0)."""

    @property
    def log_end(self) -> int:
        """The last index in the log (0 when empty)."""

    def generation_at(self, index: int) -> int:
        """Generation of the entry at `index`; 0 for index 0. IndexError beyond log_end."""

    def entry_at(self, index: int) -> Entry:
        """The entry at `index` (1 <= index <= log_end)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AppendResult:
    """What a follower decides about one replication request.

    success: the (prev_index, prev_generation) check passed.
    truncate_from: remove this index and everything after it before appending (None: remove nothing).
    append: the entries to write after the truncation (entries already held are not repeated).
    match_index: on success, the last index now known to match the leader: prev_index + len(entries).
    conflict_index: on refusal, the index the leader should retry from.
    """

    success: bool
    truncate_from: int | None = None
    append: tuple[Entry, ...] = ()
    match_index: int = 0
    conflict_index: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class SegmentInfo:
    """One segment file of the write-ahead log, as the log scanned it.

    offsets maps each index held in this segment to the byte offset where its record starts.
    """

    path: str
    first_index: int
    offsets: dict[int, int] = field(default_factory=dict)
    size: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class TruncationPlan:
    """How to remove an index and everything after it: delete whole segment files, then cut one file short."""

    delete: tuple[str, ...] = ()
    cut_path: str | None = None
    cut_offset: int = 0



# ---- the exercises: one table ------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Function:
    """One function a student writes: its name (the attribute of an Impl), its parameters, what it must return
    (the accepted types, and how its docstring names them) and who calls it."""

    name: str
    parameters: str
    returns: tuple[type, ...]
    returns_said: str
    called_by: str

    @property
    def signature(self) -> str:
        return f"{self.name}({self.parameters}) -> {self.returns_said}"


@dataclass(frozen=True, slots=True)
class Exercise:
    """One exercise: its number (also the rubric's key, `[exercises.N]`), the file of `exercises/` and of
    `solutions/` that holds it (`file`.py), and its functions."""

    number: int
    file: str
    functions: tuple[Function, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.functions)

    @property
    def path(self) -> str:
        """The student's file, from the repository's root."""
        return f"exercises/{self.file}.py"


# Each function's name, for the code that keys something by one function (a judge, a sample call, a reach).
HIGH_WATER_MARK = "high_water_mark"
ON_REPLICATION_RESPONSE = "on_replication_response"
FOLLOWER_APPEND = "follower_append"
CHECK_READ = "check_read"
PLAN_TRUNCATION = "plan_truncation"
LEADER_EPOCH_END = "leader_epoch_end"
EPOCH_TRUNCATION_POINT = "epoch_truncation_point"

EXERCISES: tuple[Exercise, ...] = (
    Exercise(1, "high_water_mark", (
        Function(HIGH_WATER_MARK, "match_indexes", (int,), "int",
                 "the leader, handed to exercise 2 on every acknowledgement"),)),
    Exercise(2, "leader", (
        Function(ON_REPLICATION_RESPONSE, "match_index, follower, acknowledged, current_hwm, generation, "
                 "generation_at, high_water_mark", (int,), "int",
                 "the leader, on every successful replication response; exercise 1's function is handed in"),)),
    Exercise(3, "follower", (
        Function(FOLLOWER_APPEND, "log, prev_index, prev_generation, entries", (AppendResult,), "AppendResult",
                 "a follower, on every replication request"),)),
    Exercise(4, "reads", (
        Function(CHECK_READ, "index, high_water_mark", (str, type(None)), "str or None",
                 "every node, on every client read"),)),
    Exercise(5, "wal_truncation", (
        Function(PLAN_TRUNCATION, "segments, index", (TruncationPlan,), "TruncationPlan",
                 "the write-ahead log's `truncate_from`"),)),
    Exercise(6, "leader_epoch", (
        Function(LEADER_EPOCH_END, "log, of_generation", (int,), "int",
                 "the leader, asked by a restarted follower (`leader-epoch` strategy)"),
        Function(EPOCH_TRUNCATION_POINT, "log, end_index", (int, type(None)), "int or None",
                 "a restarted follower, with the leader's answer (`leader-epoch` strategy)"))),
)

FUNCTIONS: dict[str, Function] = {f.name: f for ex in EXERCISES for f in ex.functions}  # in the table's order
EXERCISE_OF: dict[str, int] = {f.name: ex.number for ex in EXERCISES for f in ex.functions}
