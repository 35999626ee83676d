"""Exercise 1 done as the article does: right for odd cluster sizes, wrong for even ones."""

from solutions import *  # noqa: F401,F403


def high_water_mark(match_indexes):
    return sorted(match_indexes)[len(match_indexes) // 2]
