"""Exercise 5: truncating the write-ahead log, across segments.

The log is a series of segment files. Scanning them at start gives, per segment, the index of its first entry
and a map index -> byte offset where that entry's record starts. To remove an index and everything after it:
- every segment whose first index is above it is deleted whole;
- the segment that holds it is cut short at that entry's offset (earlier entries in it stay).
The write-ahead log (lab/ports/wal.py) applies the plan you return; reopening the log afterwards must show the same entries.
"""

from typing import Sequence

from lab.core.interface import SegmentInfo, TruncationPlan


def plan_truncation(segments: Sequence[SegmentInfo], index: int) -> TruncationPlan:
    """Return the plan that removes `index` and every later entry.

    segments: in order; each has .path, .first_index, .offsets (index -> byte offset) and .size.
    Return TruncationPlan(delete=tuple_of_paths, cut_path=path_or_None, cut_offset=offset).
    Raise ValueError if no segment holds `index` and nothing comes after it.
    """
    raise NotImplementedError(
        "exercise 5: delete the segments that start after `index`; cut the one holding it at offsets[index]")
