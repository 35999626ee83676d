"""The grader's checks in words: ids, titles and the rule each one enforces (no Spark here, so reports and
`--help` can use them without starting a JVM)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Rule:
    number: int
    check: str  # the id used in violations, the rubric and the reports
    title: str
    rule: str  # what must hold, for feedback


RULES: tuple[Rule, ...] = (
    Rule(1, "hwm-majority", "The HWM never exceeds what a majority held",
         "When a leader raises its high-water mark to k in generation g, a majority of the cluster (the leader "
         "included) must already have acknowledged index k or more in generation g, and entry k must be of "
         "generation g (an older generation's entry is only committed by committing a newer one after it)."),
    Rule(2, "read-above-hwm", "No read above the serving node's HWM",
         "A node may serve a read of index i only if i is at or below its own high-water mark at that moment."),
    Rule(3, "hwm-monotonic", "A node's HWM never moves back",
         "While a node lives (one boot), its high-water mark only grows."),
    Rule(4, "committed-never-change", "Committed entries never change",
         "Once an entry is under any node's high-water mark, it is the entry at that index on every node that "
         "later holds that index in the same or a newer generation, and in every final log."),
    Rule(5, "acked-in-final-logs", "Every acknowledged write survives",
         "Every write acknowledged to a client is, at its index, in the final log of every live node."),
    Rule(6, "logs-agree", "Logs agree up to the final HWM",
         "At the end of the run the logs of the live nodes hold the same entries up to the final high-water mark, "
         "and no node's high-water mark is beyond its own log end."),
    Rule(7, "truncation-safe", "Truncation only removes conflicting entries",
         "A follower may only remove entries that conflict with the leader's log: never an entry of the same "
         "generation as the leader's at that index, never an entry under its own high-water mark, never an entry "
         "already committed."),
    Rule(8, "liveness", "The HWM catches up after the last fault",
         "After the last fault (kill, restart, pause, resume, cut, heal), every live node's high-water mark "
         "reaches the last acknowledged write within the scenario's liveness bound."),
    Rule(9, "scenario", "The scenario's own expectations",
         "Every expectation the scenario states holds (for example in S1: e4 is never served and every final "
         "log is [e1, e2, e3, e5])."),
    Rule(10, "read-gate-strict", "A read at or below the HWM is served",
         "A node refuses a read only of an index that does not exist or is above its high-water mark: a read of "
         "an index from 1 up to the HWM must be served (check_read)."),
    Rule(11, "wal-truncation", "Truncating the WAL leaves the log ending just before the cut",
         "After a node's log storage applies a truncation from index i, its durable log (rescanned) ends at "
         "i - 1: no later segment is kept and the cut falls at the right record (plan_truncation)."),
    Rule(12, "epoch-end", "The leader answers where its log ends for the asked generation",
         "The end index a leader gives for generation g is the last index of its log whose generation is g or "
         "lower: within its log, with an entry of generation g or lower there, and the entry after it (if any) of "
         "a newer generation (leader_epoch_end)."),
    Rule(13, "epoch-truncation", "A restarted follower cuts its log just after the leader's end index",
         "Given the leader's end index e, a follower whose log goes beyond e removes entries from e + 1 on, and "
         "removes nothing when its log ends at or before e (epoch_truncation_point)."),
)

CHECK_IDS: tuple[str, ...] = tuple(r.check for r in RULES)

# Not a check of the traces: a rubric's `rules` entry scores the share of the exercise's rules found ok. When the
# grader re-executes the submissions it runs them itself on the student's code; otherwise it takes them as the
# submission's manifest reports them (docs/grading.md, "The rubric").
SELF_REPORTED = Rule(0, "rules", "The exercise's rules, run on your code",
                     "Each rule of `hwm-lab exercise check` runs on your functions; these points are the share of "
                     "rules found ok (run by the grader itself when it re-executes the class, else as your "
                     "submission reports them). The traces' checks carry the other points.")

# The grader's probes (lab/grade/probes.py): its own checks of a student's function over many small situations, for
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
