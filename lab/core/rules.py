"""The lab's safety and liveness rules in words: ids, titles and what each one enforces. Declared once, here; the
grader's checks (lab.grade), the monitor that the explorer, the scenarios and chaos run (lab.core.monitor) and the
reports all name a rule by its id."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Rule:
    number: int
    check: str  # the id used in violations, the rubric and the reports
    title: str
    rule: str  # what must hold, for feedback
    kind: str = "state"  # STATE: a rule of the cluster's state, whatever code runs; CALL: one function's answers,
    # judged from what the node did with them (a stricter gate or an epoch's end breaks no state of the cluster)


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
         "an index from 1 up to the HWM must be served (check_read).", "call"),
    Rule(11, "wal-truncation", "Truncating the WAL leaves the log ending just before the cut",
         "After a node's log storage applies a truncation from index i, its durable log (rescanned) ends at "
         "i - 1: no later segment is kept and the cut falls at the right record (plan_truncation)."),
    Rule(12, "epoch-end", "The leader answers where its log ends for the asked generation",
         "The end index a leader gives for generation g is the last index of its log whose generation is g or "
         "lower: within its log, with an entry of generation g or lower there, and the entry after it (if any) of "
         "a newer generation (leader_epoch_end).", "call"),
    Rule(13, "epoch-truncation", "A restarted follower cuts its log just after the leader's end index",
         "Given the leader's end index e, a follower whose log goes beyond e removes entries from e + 1 on, and "
         "removes nothing when its log ends at or before e (epoch_truncation_point).", "call"),
    Rule(14, "progress", "The cluster gets as far as the scenario waits for",
         "Every wait of the scenario is met in time (the high-water mark reaches an index, the logs catch up, a "
         "leader is elected) and so is every write it waits to see acknowledged; a read of an index below the "
         "serving node's high-water mark is served. A run that never advances breaks no safety rule, and proves "
         "nothing by it: an exercise's other checks earn their points only in the runs that advance."),
)

STATE, CALL = "state", "call"  # a rule's kind
CHECK_IDS: tuple[str, ...] = tuple(r.check for r in RULES)
STATE_CHECKS: frozenset[str] = frozenset(r.check for r in RULES if r.kind == STATE)
RULE_BY_ID: dict[str, Rule] = {r.check: r for r in RULES}
