"""Exercise 5 (reference): plan the truncation of the write-ahead log, across segments."""

from typing import Sequence

from lab.core.interface import SegmentInfo, TruncationPlan


def plan_truncation(segments: Sequence[SegmentInfo], index: int) -> TruncationPlan:
    """Remove `index` and every later entry: delete the segments that start after it, cut the one that holds it."""
    delete = []
    cut_path, cut_offset = None, 0
    for segment in segments:
        if segment.first_index > index:
            delete.append(segment.path)
        elif index in segment.offsets:
            cut_path, cut_offset = segment.path, segment.offsets[index]
    if cut_path is None and not delete:
        raise ValueError(f"cannot truncate from index {index}: no segment holds it")
    return TruncationPlan(delete=tuple(delete), cut_path=cut_path, cut_offset=cut_offset)
