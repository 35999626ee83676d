"""Exercise 4 that serves whatever the log holds, ignoring the high-water mark."""

from solutions import *  # noqa: F401,F403


def check_read(index, high_water_mark):
    return None if index >= 1 else f"not available: index {index} does not exist"
