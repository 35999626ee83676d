"""Exercise 2: the leader's handling of a successful replication response.

A follower answers a replication request with the last index it now knows matches the leader's log. The leader
records it as that follower's match index and asks: does a majority now hold a larger index? If so, the
high-water mark advances, and the clients waiting for those entries are acknowledged.

What can go wrong:
- Responses arrive late and twice: a match index must never go down.
- The high-water mark must never move back.
- Raft's figure 8 (scenario F8): a new leader must not commit an entry of an OLDER generation just because a
  majority holds it; that entry can still be overwritten by another leader. Only an entry of the leader's
  current generation is committed by counting; the older ones before it become committed with it.
"""

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
    """Record `follower`'s acknowledgement and return the leader's new high-water mark.

    match_index: node id -> match index, for every node including the leader; update it in place.
    follower: who answered; acknowledged: the index it acknowledged.
    current_hwm: the leader's high-water mark now; generation: the leader's generation.
    generation_at(i): the generation of the leader's entry at index i.
    high_water_mark(match_indexes): exercise 1's function, handed in by the lab; call it for the majority index.
    (It is your own exercise 1. `hwm-lab exercise check 2` judges each of its answers, and where one is wrong or
    exercise 1 is not written yet, hands in the right answer for that case instead and tells you.)
    """
    raise NotImplementedError(
        "exercise 2: raise match_index[follower] (never lower it), compute the majority index, and return it "
        "only if it is above current_hwm AND its entry is of the current generation; else current_hwm")
