"""Exercise 1: the high-water mark from the match indexes.

The leader knows, for every node (itself included), the last index that node holds: its match index.
An entry is safe once a majority of the cluster holds it: then any future leader (elected by a majority)
must hold it too. The high-water mark is the largest such index.

What can go wrong: the article computes `sorted(match_indexes)[n / 2]`. Try it on a 4-node cluster with
match indexes [9, 7, 3, 3]: it says 7, but only 2 of 4 nodes hold index 7. A majority of 4 is 3.
Scenario N4 (`hwm-lab simulate n4`) shows it.
"""

from typing import Sequence


def high_water_mark(match_indexes: Sequence[int]) -> int:
    """Return the largest index that a majority of the cluster holds.

    match_indexes: one number per node of the cluster, the leader's own included (how far its log is on its
    disk: it sends entries before it has synced them), in any order.
    A majority of n nodes is n // 2 + 1. Examples: [3, 3, 1] -> 3; [7, 5, 5, 3] -> 5; [9, 7, 3, 3] -> 3; [4] -> 4.
    Do not modify the argument.
    """
    raise NotImplementedError(
        "exercise 1: return the largest index held by at least len(match_indexes) // 2 + 1 nodes "
        "(hint: sort from largest to smallest and count)")
