"""The grader's checks in words: the lab's rules (lab.core.rules, declared there once) and the rubric's entries that
are not checks of the traces (no Spark here, so reports and `--help` can use them without starting a JVM)."""

from __future__ import annotations

from lab.core.rules import CHECK_IDS, RULES, Rule

__all__ = ["Rule", "RULES", "CHECK_IDS", "SELF_REPORTED", "PROBES", "GRADER_ENTRIES", "BY_ID"]


# Not a check of the traces: a rubric's `rules` entry scores the share of the exercise's rules found ok. When the
# grader re-executes the submissions it runs them itself on the student's code; otherwise it takes them as the
# submission's manifest reports them (docs/grading.md, "The rubric").
SELF_REPORTED = Rule(0, "rules", "The exercise's rules, run on your code",
                     "Each rule of `hwm-lab exercise check` runs on your functions; these points are the share of "
                     "rules found ok (run by the grader itself when it re-executes the class, else as your "
                     "submission reports them). The traces' checks carry the other points.")

# The grader's probes (lab/grade/sandbox/function_probes.py): its own checks of a student's function over many small situations, for
# mistakes no scenario's trace shows. Rubric entries like the checks; only a re-executing grade runs them.
PROBES: tuple[Rule, ...] = (
    Rule(0, "match-acknowledged", "A follower acknowledges only what it holds of the leader's log",
         "When a follower accepts a replication request it answers match_index = prev_index + the number of "
         "entries sent, and its log then holds the leader's entries up to that index. Its log end is not an "
         "answer: entries beyond what the request vouches for may be stale ones of an older generation, and a "
         "leader that counts them can commit an entry a majority does not hold (follower_append)."),
)
GRADER_ENTRIES: tuple[str, ...] = (SELF_REPORTED.check, *(p.check for p in PROBES))  # rubric entries not of the traces
BY_ID: dict[str, Rule] = {r.check: r for r in (*RULES, SELF_REPORTED, *PROBES)}
