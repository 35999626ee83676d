"""Exercise 3: the follower's handling of a replication request.

The leader sends entries after (prev_index, prev_generation): "I am sending what follows my entry at prev_index,
which is of generation prev_generation". The follower first checks that it holds that same entry; if not,
it refuses and tells the leader where to retry from. If it does, it walks the entries:
- an entry it already holds (same index, same generation) is skipped: appends are idempotent, and a late or
  duplicated request must never remove anything;
- the first entry that conflicts (same index, other generation) is where the follower truncates: that entry
  and everything after it go (this is how a restarted old leader loses its uncommitted e4 in scenario S1);
- the rest is appended.
It answers with match_index = prev_index + len(entries): NOT its log end, which may still hold stale entries
beyond what the leader sent.
"""

from typing import Sequence

from lab.core.interface import AppendResult, Entry, LogView


def follower_append(log: LogView, prev_index: int, prev_generation: int, entries: Sequence[Entry]) -> AppendResult:
    """Decide what to do with a replication request; do not modify `log` (the caller applies the result).

    log: log.log_end, log.generation_at(i) (0 for i = 0), log.entry_at(i).
    Return AppendResult(success=False, conflict_index=...) to refuse: conflict_index is where the leader should
    retry from (log.log_end + 1 when the log is too short; the first index of the conflicting generation is a
    good answer when generations differ).
    Return AppendResult(success=True, truncate_from=i or None, append=tuple_of_new_entries,
    match_index=prev_index + len(entries)) to accept.
    """
    raise NotImplementedError(
        "exercise 3: check (prev_index, prev_generation), skip entries you hold, truncate at the first "
        "conflict, append the rest, and answer match_index = prev_index + len(entries)")
