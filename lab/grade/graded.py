"""Which violations cost points: the rubric's `grades` rule as a Spark column, so that violations.csv marks each
row `graded` and the class's counts leave the others out (docs/grading.md, "Outputs")."""

from __future__ import annotations

import functools
import operator

from lab.grade.rubric import RULES_ENTRY, Rubric


def graded_column(rubric: Rubric):
    """True where `Rubric.grades(exercise, scenario, check, index)` is: over columns exercise, scenario, check and
    index."""
    from pyspark.sql import functions as F

    scenario = F.lower(F.coalesce(F.col("scenario"), F.lit("")))
    listed = []
    for ex in rubric.exercises:
        checks = sorted({*(c for c in ex.points if c != RULES_ENTRY), *ex.progress})
        counts = F.lit(True) if "*" in ex.scenarios else scenario.isin(list(ex.scenarios))
        listed.append((F.col("exercise") == ex.number) & F.col("check").isin(checks) & counts)
    skipped = [(scenario == s) & F.col("check").isin(sorted(skip.checks))
               & (F.col("index").isin(sorted(skip.indexes)) if skip.indexes else F.lit(True))
               for s, skip in rubric.skip.items() if skip.checks]
    graded = functools.reduce(operator.or_, listed, F.lit(False))
    if skipped:
        graded = graded & ~F.coalesce(functools.reduce(operator.or_, skipped), F.lit(False))
    return F.coalesce(graded, F.lit(False))


def graded_totals(rubric: Rubric, counts: dict[tuple[str, str, str], int],
                  runs: dict[tuple[str, str], tuple[int, str | None]]) -> dict[str, int]:
    """Violations per check, of graded rows only. counts: (student, run, check) -> n, of the graded violations
    (a skip at an index was applied to them already); runs: (student, run) -> (exercise, scenario)."""
    totals: dict[str, int] = {}
    for (student, run, check), n in counts.items():
        exercise, scenario = runs.get((student, run), (None, None))
        if rubric.grades(exercise, scenario, check):
            totals[check] = totals.get(check, 0) + n
    return totals


NODE_NAME = r"\b[A-G]\b"  # a node's name in a message (the lab names nodes A to G): the same mistake on another node


def common_messages(marked, limit: int = 15) -> list[dict]:
    """The most common failure messages of graded violations (numbers as N, digests as <digest>, and messages that
    differ by their nodes' names only taken as one, shown as the first of them): per check and message, the students
    and violations."""
    from pyspark.sql import functions as F

    shape = F.regexp_replace(F.regexp_replace("detail", "[0-9a-f]{16}", "<digest>"), r"\d+(\.\d+)?", "N")
    return [r.asDict() for r in marked.filter("graded")
            .select("check", "submission", shape.alias("shape"), F.regexp_replace(shape, NODE_NAME, "X").alias("key"))
            .groupBy("check", "key")
            .agg(F.min("shape").alias("message"), F.count(F.lit(1)).alias("violations"),
                 F.countDistinct("submission").alias("students"))
            .drop("key").orderBy(F.desc("students"), F.desc("violations"), "check", "message").limit(limit).collect()]
