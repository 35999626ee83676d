"""The similarity threshold, measured: generated classes of independent correct answers in different styles
(tests/grade/styles.py), the most similar independent pairs per scope, and renamed copies beside them.

    python bench/similarity.py [--classes 5] [--students 30]

Pure Python (the exact Jaccard similarity that the grader's MinHash LSH join reports for its candidates); it
prints, per scope, the highest similarity of an independent pair in each class, the threshold, and how many
independent pairs each class would list."""

from __future__ import annotations

import argparse
import itertools
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from lab.grade.outputs import similarity as sim  # noqa: E402
from tests.grade import styles  # noqa: E402


def measure(first_seed: int, students: int) -> dict[str, tuple[float, int]]:
    """scope -> (highest independent similarity, pairs at or above the threshold)."""
    files = {f"s{i:03d}": {k: v.decode() for k, v in styles.student_files(first_seed + i).items()}
             for i in range(students)}
    files[sim.SOLUTIONS] = sim.reference_files()
    docs, _ = sim.documents(files, sim.handout_stubs())
    by_scope = defaultdict(list)
    for owner, scope, shingles in docs:
        by_scope[scope].append(shingles)
    out = {}
    for scope, items in sorted(by_scope.items()):
        threshold = sim.WHOLE_THRESHOLD if scope == sim.WHOLE else sim.EXERCISE_THRESHOLD
        sims = [len(a & b) / len(a | b) for a, b in itertools.combinations(items, 2)]
        out[scope] = (max(sims, default=0.0), sum(s >= threshold for s in sims))
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--classes", type=int, default=5)
    p.add_argument("--students", type=int, default=30)
    args = p.parse_args(argv)
    listed = 0
    for c in range(args.classes):
        for scope, (top, pairs) in measure(10_000 * (c + 1), args.students).items():
            threshold = sim.WHOLE_THRESHOLD if scope == sim.WHOLE else sim.EXERCISE_THRESHOLD
            print(f"class {c + 1}: {scope:28s} highest independent pair {top:.2f} (threshold {threshold:.2f}): "
                  f"{pairs} listed")
            listed += pairs
    copy = styles.student_files(1)
    a = sim.documents({"a": {k: v.decode() for k, v in copy.items()},
                       "b": {k: v.decode() for k, v in styles.renamed(copy).items()}}, sim.handout_stubs())[0]
    whole = [s for o, scope, s in a if scope == sim.WHOLE]
    print(f"a copy with every name changed: {len(whole[0] & whole[1]) / len(whole[0] | whole[1]):.2f} whole")
    print(f"independent pairs listed in {args.classes} classes of {args.students}: {listed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
