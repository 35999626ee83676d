"""The small interface between the lab and the pieces students write (`exercises/`, answered in `solutions/`).

The replica, the write-ahead log and the simulator call these functions through an `Impl` (see `lab.core.impl`),
never a module directly, so `--impl solutions`, `--impl exercises` or any module with the same names can be
plugged in. Each function is pure: it decides, the caller applies.

| exercise | function | called by |
|---|---|---|
| 1 | `high_water_mark(match_indexes) -> int` | the leader, handed to exercise 2 on every acknowledgement |
| 2 | `on_replication_response(match_index, follower, acknowledged, current_hwm, generation, generation_at, high_water_mark) -> int` | the leader, on every successful replication response; exercise 1's function is handed in |
| 3 | `follower_append(log, prev_index, prev_generation, entries) -> AppendResult` | a follower, on every replication request |
| 4 | `check_read(index, high_water_mark) -> str or None` | every node, on every client read |
| 5 | `plan_truncation(segments, index) -> TruncationPlan` | the write-ahead log's `truncate_from` |
| 6 | `leader_epoch_end(log, of_generation) -> int`, `epoch_truncation_point(log, end_index) -> int or None` | leader and restarted follower, `leader-epoch` strategy |
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Sequence

from lab.core.messages import Entry

__all__ = ["Entry", "LogView", "AppendResult", "SegmentInfo", "TruncationPlan"]


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

