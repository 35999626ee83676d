"""The grader's checks in words: the lab's rules (lab.core.rules, declared there once) and the rubric's entries that
are not checks of the traces (no Spark here, so reports and `--help` can use them without starting a JVM)."""

from __future__ import annotations

from lab.core.rules import CHECK_IDS, RULES, Rule

__all__ = ["Rule", "RULES", "CHECK_IDS", "SELF_REPORTED", "BY_ID"]


# Not a check of the traces: a rubric's `rules` entry scores the share of the exercise's rules that the student's
# own check found ok, as the submission's manifest reports it (docs/grading.md, "The rubric").
SELF_REPORTED = Rule(0, "rules", "The exercise's rules, as your own check ran them",
                     "`hwm-lab exercise check` runs each rule of the exercise on your code; these points are the "
                     "share of rules it found ok, as your submission reports it. The traces' checks carry the "
                     "other points.")
BY_ID: dict[str, Rule] = {r.check: r for r in (*RULES, SELF_REPORTED)}
