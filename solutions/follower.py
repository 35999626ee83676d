"""Exercise 3 (reference): the follower's handling of a replication request."""

from typing import Sequence

from lab.core.interface import AppendResult, Entry, LogView


def follower_append(log: LogView, prev_index: int, prev_generation: int, entries: Sequence[Entry]) -> AppendResult:
    """Check (prev_index, prev_generation), skip entries already held, truncate at the first conflict, append."""
    if prev_index > log.log_end:
        return AppendResult(success=False, conflict_index=log.log_end + 1)
    held = log.generation_at(prev_index)
    if held != prev_generation:
        # Skip the whole conflicting generation at once: retry from its first index here.
        first = prev_index
        while first > 1 and log.generation_at(first - 1) == held:
            first -= 1
        return AppendResult(success=False, conflict_index=first)

    truncate_from = None
    new: list[Entry] = []
    for position, entry in enumerate(entries):
        if entry.index <= log.log_end:
            if log.generation_at(entry.index) == entry.generation:
                continue  # already held: appends are idempotent
            truncate_from = entry.index  # same index, other generation: this and everything after goes
        new = list(entries[position:])
        break
    return AppendResult(
        success=True,
        truncate_from=truncate_from,
        append=tuple(new),
        match_index=prev_index + len(entries),
    )
