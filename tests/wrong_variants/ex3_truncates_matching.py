"""Exercise 3 that truncates from the first entry it is sent, even when that entry matches."""

from lab.core.interface import AppendResult
from solutions import *  # noqa: F401,F403


def follower_append(log, prev_index, prev_generation, entries):
    if prev_index > log.log_end:
        return AppendResult(success=False, conflict_index=log.log_end + 1)
    if log.generation_at(prev_index) != prev_generation:
        return AppendResult(success=False, conflict_index=max(1, prev_index))
    cut = prev_index + 1 if entries and prev_index + 1 <= log.log_end else None
    return AppendResult(success=True, truncate_from=cut, append=tuple(entries),
                        match_index=prev_index + len(entries))
