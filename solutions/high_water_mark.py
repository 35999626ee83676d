"""Exercise 1 (reference): the high-water mark from the match indexes."""

from typing import Sequence


def high_water_mark(match_indexes: Sequence[int]) -> int:
    """The largest index that a majority of the cluster holds (the leader's own durable log end included)."""
    if not match_indexes:
        raise ValueError("high_water_mark needs the match index of at least one node")
    majority = len(match_indexes) // 2 + 1
    # The majority-th largest: at least `majority` nodes hold an index >= it, and no larger index has that many.
    return sorted(match_indexes, reverse=True)[majority - 1]
