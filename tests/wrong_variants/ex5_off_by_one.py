"""Exercise 5 that cuts after the entry instead of at it: the truncated index survives."""

from lab.core.interface import TruncationPlan
from solutions import *  # noqa: F401,F403


def plan_truncation(segments, index):
    delete = tuple(s.path for s in segments if s.first_index > index + 1)
    for s in segments:
        if index + 1 in s.offsets:
            return TruncationPlan(delete=delete, cut_path=s.path, cut_offset=s.offsets[index + 1])
    return TruncationPlan(delete=delete)
