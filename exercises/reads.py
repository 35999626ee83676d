"""Exercise 4: read gating.

Entries above a node's high-water mark may still disappear (scenario S1: the old leader's e4). A node, leader
or follower, must therefore serve a client only entries at or below its own high-water mark, and say clearly
why it refuses the others.
"""


def check_read(index: int, high_water_mark: int) -> str | None:
    """Return None if the entry at `index` may be served, else the refusal message for the client.

    The refusal above the mark must read exactly:
        "not available: index 4 is above the high-water mark 3"
    An index below 1 does not exist: refuse it too (any clear message starting with "not available").
    """
    raise NotImplementedError(
        "exercise 4: return None when 1 <= index <= high_water_mark, else "
        "'not available: index I is above the high-water mark H'")
