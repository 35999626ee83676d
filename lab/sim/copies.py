"""Copies of one node's state for the explorer's copy-on-write worlds: its replica, its log on disk, its driver."""

from __future__ import annotations

from lab.core.progress import MatchIndex, Progress
from lab.core.replica import Log, PendingRead
from lab.ports.memlog import _Segment


def _copy(obj):
    """A shallow copy without copy.copy's reduce protocol (it was most of a search's time)."""
    new = object.__new__(type(obj))
    new.__dict__.update(obj.__dict__)
    return new


def _copy_replica(r):
    if r is None:
        return None
    new = _copy(r)
    log = new.log = Log.__new__(Log)
    log._entries = list(r.log._entries)
    new.progress = {n: Progress(p.match, p.next) for n, p in r.progress.items()}
    new.match_index = MatchIndex(new.progress)
    new.votes = set(r.votes)
    new.prevotes = set(r.prevotes) if r.prevotes is not None else None
    new.pending_writes, new.write_deadlines = r.pending_writes.copy(), r.write_deadlines.copy()
    if r.pending_reads:  # (a search makes no linearizable read; a clone of one holding them keeps its own)
        new.pending_reads = [PendingRead(p.read, p.read_index, p.round, p.deadline, set(p.confirmed))
                             for p in r.pending_reads]
    return new


def _copy_log(log):
    new = _copy(log)
    segments = []
    for s in log._segments:
        c = _Segment.__new__(_Segment)
        c.first_index, c.entries, c.offsets, c.size = s.first_index, list(s.entries), list(s.offsets), s.size
        segments.append(c)
    new._segments = segments
    return new
