"""Exercise 6: restart recovery with leader epochs (Kafka's KIP-101).

Try `hwm-lab simulate k1 --truncation high-water-mark` and `... k2 ...` first: truncating to the local
high-water mark on restart loses an acknowledged write (K1) or lets the logs diverge (K2).
KIP-101's fix: a restarted follower asks the leader "where does your log end for my last generation?"
(the generation is Kafka's leader epoch) and truncates there, before fetching anything.
"""

from lab.core.interface import LogView


def leader_epoch_end(log: LogView, of_generation: int) -> int:
    """Leader side: the last index of the leader's log whose generation is <= of_generation (0 if none)."""
    raise NotImplementedError(
        "exercise 6: walk back from log.log_end while the entry's generation is above of_generation")


def epoch_truncation_point(log: LogView, end_index: int) -> int | None:
    """Follower side: given the leader's answer `end_index`, the first index to remove, or None to keep all."""
    raise NotImplementedError(
        "exercise 6: everything after end_index that this follower holds must go")
