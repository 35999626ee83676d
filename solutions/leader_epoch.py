"""Exercise 6 (reference): restart recovery with leader epochs (Kafka KIP-101)."""

from lab.core.interface import LogView


def leader_epoch_end(log: LogView, of_generation: int) -> int:
    """Leader side: the last index of the leader's log whose generation is <= of_generation."""
    index = log.log_end
    while index > 0 and log.generation_at(index) > of_generation:
        index -= 1
    return index


def epoch_truncation_point(log: LogView, end_index: int) -> int | None:
    """Follower side: the first index to remove, given the leader's end for our last generation; None to keep all."""
    if end_index < log.log_end:
        return end_index + 1
    return None
