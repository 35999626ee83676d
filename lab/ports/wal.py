"""The write-ahead log: a node's log entries in append-only segment files, with a torn-tail-safe recovery.

Layout. A directory of segment files named by the first index they hold (`00000000000000000001.wal`); a new
segment starts when the current one has reached `segment_bytes`. The records are lab.ports.segments's (a header
with a CRC, then the UTF-8 payload), the same the memory twin counts.

fsync policies (what `append` promises when it returns):
- `always`: the records are written and fsynced (one `os.write` and one `os.fsync` per append call). The driver
  splits the two: `write`, then (once a leader's replication requests are on their way) `sync`, one fsync per step.
- `batch` (group commit): the records are written to the OS; `sync()` makes everything written since the
  last sync durable with one fsync. A process kill loses nothing, a power cut loses what was not synced.
- `never`: the records go to an in-process buffer, written to the file only when the buffer passes 64 KiB,
  when a segment fills up, before a truncation, at `flush()` and at `close()`. `sync()` does NOT write the
  buffer, and nothing is ever fsynced. So killing a `never` node (SIGKILL) loses its unwritten tail exactly
  like a power cut loses unsynced pages: that is how the lab stages scenario K2 with real processes.

Recovery. Opening the log scans every segment in order and stops at the first bad record (short read, length
beyond MAX_PAYLOAD, CRC mismatch, bad UTF-8, an index that does not follow the previous one). When nothing valid
follows it, it is a torn tail (a write cut short by a crash): that record's file is cut there and every later
segment is removed. When valid records follow it (the next record, or a later segment, checks out), the damage is
in the middle of the log, and cutting there would silently drop entries the cluster may have counted on: the log
refuses to open (WalCorruption, naming the file and offset) unless opened with `repair=True`, which keeps the
valid prefix. What was dropped is logged and kept in `recovery`. A corrupt record is never returned as data:
`read` and `entries` check the CRC again.
"""

from __future__ import annotations

import bisect
import logging
import os
import zlib
from dataclasses import dataclass
from typing import Iterable, Iterator

from lab.core.config import FSYNC_POLICIES, check_choice
from lab.core.interface import SegmentInfo
from lab.core.messages import Entry
from lab.ports.disk_faults import FsyncFailed, mark
from lab.ports.segments import (
    CRC_PREFIX, HEADER, MAX_PAYLOAD, SEGMENT_BYTES, SUFFIX, BadRecord, PlanLeftEntries, Truncation, check_plan, decode,
    segment_name)

__all__ = ["WriteAheadLog", "Recovery", "WalCorruption"]

log = logging.getLogger(__name__)

NEVER_BUFFER_BYTES = 64 * 1024
_U64 = 1 << 64


class WalCorruption(Exception):
    """A record read back from an open log does not check out (it was damaged after the log was opened)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Recovery:
    """What opening the log cut away. `first_bad_index` is the first index lost (None if no record bytes were);
    `mid_log` when valid records followed the damage (only opened with repair=True)."""

    dropped_bytes: int
    first_bad_index: int | None
    reason: str
    mid_log: bool = False


def _valid_after(data, offset: int, expected: int, later: list) -> bool:
    """Whether a valid record follows a bad one: the next record of the same file (when the bad one's length can be
    trusted), or the first record of a later segment."""
    if offset + HEADER.size <= len(data):
        length = HEADER.unpack_from(data, offset)[0]
        if length <= MAX_PAYLOAD:
            try:
                decode(data, offset + HEADER.size + length, expected + 1)
                return True
            except BadRecord:
                pass
    for first_index, path in later:
        with open(path, "rb") as f:
            header = f.read(HEADER.size)
            if len(header) < HEADER.size or HEADER.unpack_from(header)[0] > MAX_PAYLOAD:
                continue
            try:
                decode(header + f.read(HEADER.unpack_from(header)[0]), 0, first_index)
                return True
            except BadRecord:
                continue
    return False


class _Segment:
    """One segment file as this log knows it. `size` counts the bytes still in the `never` buffer too."""

    __slots__ = ("path", "first_index", "offsets", "size")

    def __init__(self, path: str, first_index: int):
        self.path = path
        self.first_index = first_index
        self.offsets: dict[int, int] = {}
        self.size = 0

    @property
    def last_index(self) -> int:
        return self.first_index + len(self.offsets) - 1

    def info(self) -> SegmentInfo:
        return SegmentInfo(path=self.path, first_index=self.first_index, offsets=dict(self.offsets), size=self.size)


def _fsync_directory(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError as exc:
        raise mark(FsyncFailed(exc.errno, exc.strerror), "fsync of the write-ahead log's directory") from exc
    finally:
        os.close(fd)


def _write_all(fd: int, data) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class WriteAheadLog:
    """A node's log on disk. Indexes start at 1 and are contiguous; `log_end` is 0 when the log is empty."""

    def __init__(self, directory, *, fsync: str = "always", segment_bytes: int = SEGMENT_BYTES, impl=None,
                 repair: bool = False):
        check_choice("fsync policy", fsync, FSYNC_POLICIES)
        if segment_bytes < 1:
            raise ValueError(f"segment_bytes must be positive, not {segment_bytes}")
        if impl is None:
            from lab.core.impl import load

            impl = load("solutions")
        self.directory = os.fspath(directory)
        self.fsync = fsync
        self.segment_bytes = segment_bytes
        self._impl = impl
        self._segments: list[_Segment] = []
        self._firsts: list[int] = []  # first_index of each segment, for bisect
        self._fd: int | None = None  # the last segment, open for appending
        self._pending = bytearray()  # `never`: bytes of the last segment not yet written to its file
        self._unsynced = False  # `always`, `batch`: bytes written since the last fsync
        self._directory_dirty = False  # a segment file was created or removed since the last fsync
        self._log_end = 0
        self._closed = False
        self._repair = repair
        self.faults = None  # a lab.ports.disk_faults.DiskFaults: the storage faults the lab injects (node processes)
        self._synced_size = 0  # the last segment's size at its last fsync: what an injected fsync failure keeps
        self._failed: FsyncFailed | None = None  # after a failed fsync the log takes no more requests: never retried
        os.makedirs(self.directory, exist_ok=True)
        self.recovery: Recovery | None = self._recover()
        self._open_last()
        if self.fsync != "never" and self._fd is not None:
            # What a crash left in the OS's cache is read back as if durable: make it so before anyone counts on it
            # (a leader counts itself on its recovered log, and a crash may come before it had synced).
            self._fsync(self._fd)

    # ---- opening -----------------------------------------------------------------------------------------

    def _segment_files(self) -> list[tuple[int, str]]:
        found = []
        for name in os.listdir(self.directory):
            if not name.endswith(SUFFIX):
                continue
            stem = name[: -len(SUFFIX)]
            if not (len(stem) == 20 and stem.isdigit()):
                log.warning("write-ahead log %s: ignoring %s (not a segment name)", self.directory, name)
                continue
            found.append((int(stem), os.path.join(self.directory, name)))
        return sorted(found)

    def _recover(self) -> Recovery | None:
        """Scan the segments, keep the longest valid prefix, cut the rest away on disk."""
        files = self._segment_files()
        expected = 1
        for position, (first_index, path) in enumerate(files):
            with open(path, "rb") as f:
                data = f.read()
            segment = _Segment(path, first_index)
            offset = 0
            reason = None
            gap = first_index != expected
            if gap:
                reason = f"segment starts at index {first_index} where {expected} was expected"
            else:
                while offset < len(data):
                    try:
                        _, end = decode(data, offset, expected)
                    except BadRecord as bad:
                        reason = str(bad)
                        break
                    segment.offsets[expected] = offset
                    expected += 1
                    offset = end
            if reason is None:
                segment.size = len(data)
                self._segments.append(segment)
                continue
            later = files[position + 1 :]
            mid_log = not gap and _valid_after(data, offset, expected, later)
            if mid_log and not self._repair:
                raise WalCorruption(
                    f"{path} offset {offset} (index {expected}): {reason}, and valid records follow it: damage in "
                    f"the middle of the log, not a torn tail. Nothing was changed. To go on, restart the node with "
                    f"--repair: it keeps the {expected - 1} entries before the damage and catches up from the leader")
            return self._cut_tail(segment, offset, len(data), reason, later, expected, mid_log)
        self._log_end = expected - 1
        self._firsts = [s.first_index for s in self._segments]
        return None

    def _cut_tail(self, segment, offset, size, reason, later, expected, mid_log=False) -> Recovery:
        later_bytes = sum(os.path.getsize(path) for _, path in later)
        dropped = size - offset + later_bytes
        first_bad = expected if dropped else None
        log.warning(
            "write-ahead log %s: %s at offset %d of %s; dropping %d bytes from index %s on (%d later segment(s))",
            self.directory,
            reason,
            offset,
            os.path.basename(segment.path),
            dropped,
            first_bad,
            len(later),
        )
        for _, path in reversed(later):  # latest first: a crash in between still leaves a prefix
            os.remove(path)
        if offset == 0:
            os.remove(segment.path)
        else:
            with open(segment.path, "r+b") as f:
                f.truncate(offset)
                if self.fsync != "never":
                    os.fsync(f.fileno())
            segment.size = offset
            self._segments.append(segment)
        if self.fsync != "never":
            _fsync_directory(self.directory)
        self._log_end = expected - 1
        self._firsts = [s.first_index for s in self._segments]
        return Recovery(dropped_bytes=dropped, first_bad_index=first_bad, reason=reason, mid_log=mid_log)

    def _open_last(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._segments:
            self._fd = os.open(self._segments[-1].path, os.O_RDWR | os.O_APPEND)
            self._synced_size = os.fstat(self._fd).st_size

    # ---- writing -----------------------------------------------------------------------------------------

    @property
    def log_end(self) -> int:
        return self._log_end

    def append(self, entries: Iterable[Entry]) -> None:
        """Add entries after `log_end`; durable on return as the fsync policy says."""
        self.write(entries)
        if self.fsync == "always":
            self.sync()

    def write(self, entries: Iterable[Entry]) -> None:
        """Add entries after `log_end`, written to the OS (`never`: to the buffer) but not synced: `sync` does that,
        for `always` as for `batch`."""
        self._check_open()
        batch = entries if isinstance(entries, (list, tuple)) else list(entries)
        if not batch:
            return
        records = self._records(batch)  # every entry is checked before anything is written
        if len(batch) == 1 and self.fsync != "never" and self._segments:
            segment = self._segments[-1]
            if segment.size < self.segment_bytes or not segment.offsets:
                # The common path, kept lean: one write.
                record = records[0]
                try:
                    self._write_all(record)
                except OSError as exc:
                    self._reopen()  # believe the disk about what got written
                    raise mark(exc, "appending to the write-ahead log")
                self._unsynced = True
                segment.offsets[batch[0].index] = segment.size
                segment.size += len(record)
                self._log_end += 1
                return
        self._append_batch(batch, records)

    def _records(self, batch) -> list[bytes]:
        """The records of `batch` (what `encode` makes, in one loop: a busy leader appends a thousand at a time),
        checking that they follow the log end and fit."""
        records = []
        expected = self._log_end + 1
        pack, crc32, prefix = HEADER.pack, zlib.crc32, CRC_PREFIX.pack
        for index, generation, payload in batch:
            if index != expected:
                raise ValueError(f"cannot append index {index}: the log ends at {expected - 1}, so the next index "
                                 f"is {expected}")
            if not 0 <= generation < _U64:
                raise ValueError(f"generation {generation} of index {index} is out of range")
            data = payload.encode("utf-8")
            if len(data) > MAX_PAYLOAD:
                raise ValueError(f"payload of index {index} is {len(data)} bytes, over the maximum {MAX_PAYLOAD}")
            records.append(pack(len(data), crc32(data, crc32(prefix(index, generation))), index, generation) + data)
            expected += 1
        return records

    def _append_batch(self, batch, records) -> None:
        try:
            chunk = bytearray()
            segment = self._segments[-1] if self._segments else None
            for entry, record in zip(batch, records):
                if segment is None or (segment.size >= self.segment_bytes and segment.offsets):
                    self._write(chunk)
                    chunk = bytearray()
                    segment = self._roll(entry.index)
                size = segment.size
                segment.offsets[entry.index] = size
                segment.size = size + len(record)
                chunk += record
            self._log_end = batch[-1].index
            self._write(chunk)
        except OSError as exc:
            if not isinstance(exc, FsyncFailed):  # a segment's roll fsyncs the one it finishes
                self._reopen()  # believe the disk about what got written
            raise mark(exc, "appending to the write-ahead log")

    def _write(self, chunk) -> None:
        if not chunk:
            return
        if self.fsync == "never":
            self._pending += chunk
            if len(self._pending) > NEVER_BUFFER_BYTES:
                self.flush()
        else:
            self._write_all(chunk)
            self._unsynced = True

    def _roll(self, first_index: int) -> _Segment:
        """Finish the current segment and start a new one holding `first_index` first."""
        if self._fd is not None:
            self.flush()
            if self.fsync != "never" and self._unsynced:
                self._fsync(self._fd)  # a later sync() only fsyncs the new segment
                self._unsynced = False
            os.close(self._fd)
            self._fd = None
        segment = _Segment(os.path.join(self.directory, segment_name(first_index)), first_index)
        self._fd = os.open(segment.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o644)
        self._synced_size = 0
        self._segments.append(segment)
        self._firsts.append(first_index)
        self._directory_dirty = True
        return segment

    def flush(self) -> None:
        """`never`: write the in-process buffer to the file (no fsync). Other policies have nothing buffered."""
        if self._failed is not None:
            raise self._failed
        if self._pending:
            try:
                self._write_all(self._pending)
            except OSError as exc:
                raise mark(exc, "writing back the write-ahead log")
            self._pending.clear()

    def sync(self) -> None:
        """One fsync for everything written since the last (`always` and `batch`). No-op for `never`."""
        self._check_open()
        if self.fsync == "never":
            return
        if self._directory_dirty:
            self._fsync_directory()
        if self._unsynced and self._fd is not None:
            self._fsync(self._fd)
        self._unsynced = False

    def _write_all(self, data) -> None:
        if self.faults is not None:
            self.faults.before_write("appending to the write-ahead log")
        _write_all(self._fd, data)

    def _fsync_directory(self) -> None:
        try:
            _fsync_directory(self.directory)
        except FsyncFailed as exc:
            self._failed = exc
            raise
        self._directory_dirty = False

    def _fsync(self, fd: int) -> None:
        """fsync the last segment; a failure raises FsyncFailed, never to be retried (lab.ports.disk_faults)."""
        if self.faults is not None and self.faults.take_fsync_failure():
            # As a kernel may do: the pages this fsync could not write are dropped, and the file ends where the
            # last successful fsync left it.
            os.ftruncate(fd, self._synced_size)
            self._failed = self.faults.fsync_error("fsync of the write-ahead log")
            raise self._failed
        try:
            os.fsync(fd)
        except OSError as exc:
            self._failed = mark(FsyncFailed(exc.errno, exc.strerror), "fsync of the write-ahead log")
            raise self._failed from exc
        if self.faults is not None:
            self._synced_size = os.fstat(fd).st_size

    def truncate_from(self, index: int) -> Truncation | None:
        """Remove `index` and every later entry, planned by the implementation's `plan_truncation`; None when
        there was nothing to remove. PlanLeftEntries if the plan left entries behind (the log then believes the
        disk, rescanned)."""
        self._check_open()
        if index < 1:
            raise ValueError(f"cannot truncate from index {index}: indexes start at 1")
        if index > self._log_end:
            return None
        firsts = {segment.path: segment.first_index for segment in self._segments}
        self.flush()
        infos = [segment.info() for segment in self._segments]
        plan = self._impl.plan_truncation(infos, index)
        check_plan(plan, [segment.info() for segment in self._segments], self._impl.name)
        by_path = {segment.path: segment for segment in self._segments}
        durable = self.fsync != "never"
        for path in sorted(plan.delete, reverse=True):  # latest first: a crash in between still leaves a prefix
            os.remove(path)
            self._directory_dirty = True
        deleted = set(plan.delete)
        self._segments = [segment for segment in self._segments if segment.path not in deleted]
        if plan.cut_path is not None and plan.cut_path not in deleted:
            cut = by_path[plan.cut_path]
            os.truncate(cut.path, plan.cut_offset)
            if durable:
                fd = os.open(cut.path, os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
            cut.offsets = {i: offset for i, offset in cut.offsets.items() if offset < plan.cut_offset}
            cut.size = plan.cut_offset
        if durable and self._directory_dirty:
            _fsync_directory(self.directory)
            self._directory_dirty = False
        self._firsts = [segment.first_index for segment in self._segments]
        self._log_end = self._segments[-1].last_index if self._segments else 0
        self._unsynced = False
        self._open_last()
        report = Truncation(index, self._log_end, [s.first_index for s in self._segments],
                            sorted(firsts[path] for path in deleted))
        if self._log_end != index - 1 or (self._segments and self._segments[-1].first_index > index):
            # The plan left entries behind: say so, and believe the disk (rescanned) rather than the plan.
            problem = (
                f"truncation plan of {self._impl.name!r} from index {index} left the log ending at {self._log_end}"
            )
            self._reopen()
            raise PlanLeftEntries(problem, report)
        return report

    def _reopen(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self._segments, self._firsts, self._pending = [], [], bytearray()
        self.recovery = self._recover()
        self._open_last()

    # ---- reading -----------------------------------------------------------------------------------------

    def _segment_holding(self, index: int) -> _Segment:
        return self._segments[bisect.bisect_right(self._firsts, index) - 1]

    def _segment_bytes(self, segment: _Segment, start: int, end: int) -> bytes:
        """Bytes [start, end) of a segment, the `never` buffer included."""
        if segment is self._segments[-1]:
            on_file = segment.size - len(self._pending)
            data = os.pread(self._fd, max(0, min(end, on_file) - start), start) if start < on_file else b""
            if end > on_file:
                data += self._pending[max(0, start - on_file) : end - on_file]
            return data
        with open(segment.path, "rb") as f:
            f.seek(start)
            return f.read(end - start)

    def read(self, index: int) -> Entry:
        """The entry at `index` (1 <= index <= log_end)."""
        self._check_open()
        if not 1 <= index <= self._log_end:
            raise IndexError(f"index {index} is outside the log (1..{self._log_end})")
        segment = self._segment_holding(index)
        start = segment.offsets[index]
        end = segment.offsets.get(index + 1, segment.size)
        try:
            entry, _ = decode(self._segment_bytes(segment, start, end), 0, index)
        except BadRecord as bad:
            raise WalCorruption(f"{segment.path} offset {start} (index {index}): {bad}") from None
        return entry

    def entries(self, start: int = 1) -> Iterator[Entry]:
        """The entries from `start` to the `log_end` of when iteration began, one segment read at a time."""
        self._check_open()
        index, last = max(start, 1), self._log_end
        while index <= last:
            segment = self._segment_holding(index)
            stop = min(last, segment.last_index)
            data = self._segment_bytes(segment, segment.offsets[index], segment.size)
            position = 0
            for expected in range(index, stop + 1):
                try:
                    entry, position = decode(data, position, expected)
                except BadRecord as bad:
                    raise WalCorruption(f"{segment.path} (index {expected}): {bad}") from None
                yield entry
            index = stop + 1

    # ---- closing -----------------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._failed is not None:  # what is on disk is unknown: only a reopen (a restart) may say
            raise self._failed
        if self._closed:
            raise ValueError(f"write-ahead log {self.directory} is closed")

    def close(self) -> None:
        """Orderly close: `never` writes its buffer (still no fsync), `batch` syncs."""
        if self._closed:
            return
        try:
            self.flush()
            self.sync()
        finally:
            self._closed = True
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def abandon(self) -> None:
        """Close without writing the `never` buffer or syncing: what a killed process leaves behind."""
        if self._closed:
            return
        self._closed = True
        self._pending.clear()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "WriteAheadLog":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"WriteAheadLog({self.directory!r}, fsync={self.fsync!r}, log_end={self._log_end})"
