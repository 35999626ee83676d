"""Exercise 2 (reference): the leader's handling of a successful replication response."""

from typing import Callable, MutableMapping, Sequence


def on_replication_response(
    match_index: MutableMapping[str, int],
    follower: str,
    acknowledged: int,
    current_hwm: int,
    generation: int,
    generation_at: Callable[[int], int],
    high_water_mark: Callable[[Sequence[int]], int],
) -> int:
    """Record the follower's acknowledgement and return the leader's new high-water mark."""
    # Responses can arrive late or twice: a match index only grows.
    match_index[follower] = max(match_index.get(follower, 0), acknowledged)
    candidate = high_water_mark(list(match_index.values()))
    # Only an entry of the leader's own generation is committed by counting replicas (Raft figure 8);
    # earlier entries become committed with it. The mark never moves back.
    if candidate > current_hwm and generation_at(candidate) == generation:
        return candidate
    return current_hwm
