"""The in-memory twin of the write-ahead log (lab.ports.wal), for the simulator.

It keeps the same segments as the file log would (lab.ports.segments: records of HEADER.size + payload bytes, a new
segment once one reaches `segment_bytes`), so a truncation is planned by exercise 5's `plan_truncation` on the same
segment offsets and checked by the same check_plan. It also keeps what a power cut would lose: the entries not yet
synced.
fsync `always` syncs in `append`, and both `always` and `batch` in `sync()` after a `write`; `never` only when the
OS would write back (`flush()`).
Storage faults (lab.ports.disk_faults.DiskFaults in `faults`): a full disk fails appends with ENOSPC; a failed fsync
loses the unsynced tail, as a kernel drops the pages it could not write, and raises FsyncFailed.
"""

from __future__ import annotations

from typing import Iterable, Iterator

from lab.core.config import FSYNC_POLICIES, check_choice
from lab.core.interface import SegmentInfo
from lab.core.messages import Entry
from lab.ports.segments import HEADER, SEGMENT_BYTES, PlanLeftEntries, Truncation, check_plan, segment_name


class _Segment:
    __slots__ = ("first_index", "entries", "offsets", "size")

    def __init__(self, first_index: int):
        self.first_index = first_index
        self.entries: list[Entry] = []
        self.offsets: list[int] = []
        self.size = 0

    @property
    def path(self) -> str:
        return segment_name(self.first_index)

    @property
    def last_index(self) -> int:
        return self.first_index + len(self.entries) - 1

    def info(self) -> SegmentInfo:
        return SegmentInfo(path=self.path, first_index=self.first_index,
                           offsets={e.index: o for e, o in zip(self.entries, self.offsets)}, size=self.size)


class MemoryLog:
    """Indexes start at 1 and are contiguous; `log_end` is 0 when the log is empty."""

    def __init__(self, *, fsync: str = "always", segment_bytes: int = SEGMENT_BYTES, impl=None):
        self.fsync = check_choice("fsync policy", fsync, FSYNC_POLICIES)
        self.segment_bytes = segment_bytes
        self._impl = impl
        self._segments: list[_Segment] = []
        self._log_end = 0
        self.synced = 0  # entries up to this index survive a power cut
        self.faults = None  # a lab.ports.disk_faults.DiskFaults: the storage faults the simulator injects

    @property
    def log_end(self) -> int:
        return self._log_end

    def entries(self, start: int = 1) -> Iterator[Entry]:
        for segment in self._segments:
            for entry in segment.entries:
                if entry.index >= start:
                    yield entry

    def append(self, entries: Iterable[Entry]) -> None:
        self.write(entries)
        if self.fsync == "always":
            self._sync_now()

    def write(self, entries: Iterable[Entry]) -> None:
        """Append without syncing (`sync` does that, for `always` as for `batch`)."""
        if self.faults is not None:
            self.faults.before_write("appending to the write-ahead log")
        self._append(entries)

    def _append(self, entries: Iterable[Entry]) -> None:
        for entry in entries:
            if entry.index != self._log_end + 1:
                raise ValueError(f"cannot append index {entry.index}: the log ends at {self._log_end}, so the next "
                                 f"index is {self._log_end + 1}")
            segment = self._segments[-1] if self._segments else None
            if segment is None or (segment.size >= self.segment_bytes and segment.entries):
                segment = _Segment(entry.index)
                self._segments.append(segment)
            segment.entries.append(entry)
            segment.offsets.append(segment.size)
            segment.size += HEADER.size + len(entry.payload.encode("utf-8"))
            self._log_end = entry.index

    def sync(self) -> None:
        if self.fsync != "never" and self.synced < self._log_end:
            self._sync_now()

    def _sync_now(self) -> None:
        if self.faults is not None and self.faults.take_fsync_failure():
            self.lose_unsynced_tail()
            raise self.faults.fsync_error("fsync of the write-ahead log")
        self.synced = self._log_end

    def flush(self) -> None:
        """The OS writing back on its own (fsync `never`): everything so far is now on disk (not on a full one)."""
        if self.faults is None or not self.faults.full:
            self.synced = self._log_end

    def truncate_from(self, index: int) -> Truncation | None:
        """Remove `index` and every later entry, as exercise 5's plan says (see WriteAheadLog.truncate_from)."""
        if index < 1:
            raise ValueError(f"cannot truncate from index {index}: indexes start at 1")
        if index > self._log_end:
            return None
        plan = self._impl.plan_truncation([s.info() for s in self._segments], index)
        check_plan(plan, [s.info() for s in self._segments], self._impl.name)
        by_path = {s.path: s for s in self._segments}
        deleted = set(plan.delete)
        self._segments = [s for s in self._segments if s.path not in deleted]
        if plan.cut_path is not None and plan.cut_path not in deleted:
            cut = by_path[plan.cut_path]
            keep = sum(1 for offset in cut.offsets if offset < plan.cut_offset)
            del cut.entries[keep:], cut.offsets[keep:]
            cut.size = plan.cut_offset
        left = self._segments[-1].last_index if self._segments else 0  # a segment cut to nothing stays, empty
        report = Truncation(index, left, [s.first_index for s in self._segments],
                            sorted(by_path[path].first_index for path in deleted))
        self._keep_contiguous_prefix()
        self.synced = min(self.synced, self._log_end)
        if left != index - 1:
            raise PlanLeftEntries(f"truncation plan of {self._impl.name!r} from index {index} left the log ending "
                                  f"at {left}", report)
        return report

    def _keep_contiguous_prefix(self) -> None:
        """What reopening the file log would keep: the segments that follow on from index 1 without a gap."""
        expected, kept = 1, []
        for segment in self._segments:
            if segment.first_index != expected:
                break
            kept.append(segment)
            expected = segment.last_index + 1
        self._segments = kept
        self._log_end = expected - 1

    def lose_unsynced_tail(self) -> int:
        """A power cut: the entries after `synced` are gone. Returns how many."""
        lost = self._log_end - self.synced
        if lost:
            survivors = list(self.entries())[: self.synced]
            self._segments, self._log_end = [], 0
            self._append(survivors)
            self.synced = self._log_end
        return lost

    def close(self) -> None:
        pass

    def abandon(self) -> None:
        pass

    def __repr__(self) -> str:
        return f"MemoryLog(fsync={self.fsync!r}, log_end={self._log_end}, synced={self.synced})"
