"""What a leader knows of each node's log: one `Progress` record per node (etcd's tracker/progress.go).

`MatchIndex` shows the records' match indexes as the mapping exercise 2 updates in place.
"""

from __future__ import annotations

from typing import Iterator, MutableMapping


class Progress:
    """One node's replication progress, as its leader sees it.

    match: the highest index known to be in that node's log, as the leader's (0: none known).
    next: the index of the next entry to send it (optimistic: raised as soon as a request leaves).

    Invariant: 0 <= match < next. The leader keeps it: an acknowledgement raises next above match, and a
    refusal backs next up only to an index the node says it lacks, so one it never acknowledged. (Should a node
    lose entries it acknowledged, K2, a refusal may back next up below match: the leader repairs the node, and
    match keeps what was acknowledged, as the mark never moves back.)
    """

    __slots__ = ("match", "next")

    def __init__(self, match: int, next: int):
        self.match = match
        self.next = next

    def __repr__(self) -> str:
        return f"Progress(match={self.match}, next={self.next})"


def progress_of(nodes, node_id: str, log_end: int, durable_end: int) -> dict[str, Progress]:
    """A new leader's view: every node's next entry is the one after the leader's log; only its own is matched,
    as far as its log is on its disk (`durable_end`)."""
    return {n: Progress(durable_end if n == node_id else 0, log_end + 1) for n in nodes}


class MatchIndex(MutableMapping[str, int]):
    """node id -> match index, read from and written to the progress records (what exercise 2 is handed)."""

    __slots__ = ("_progress",)

    def __init__(self, progress: dict[str, Progress]):
        self._progress = progress

    def __getitem__(self, node: str) -> int:
        return self._progress[node].match

    def __setitem__(self, node: str, match: int) -> None:
        record = self._progress.get(node)
        if record is None:
            self._progress[node] = Progress(match, match + 1)
        else:
            record.match = match

    def __delitem__(self, node: str) -> None:
        del self._progress[node]

    def __iter__(self) -> Iterator[str]:
        return iter(self._progress)

    def __len__(self) -> int:
        return len(self._progress)

    def __repr__(self) -> str:
        return repr(dict(self))
