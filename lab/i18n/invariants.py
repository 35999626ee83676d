"""Each rule of the lab as the invariant it is, in words: a sentence that holds until a run breaks it. The
explorer's panel shows it beside "holds" or "broken", a counterexample's headline and its script's title say it."""

from __future__ import annotations

from lab.i18n import say
from lab.sim.world import NODE_STOPPED, STUDENT_CALL_BROKEN, STUDENT_FAULT

# Each rule as the invariant it is: a sentence that holds until the run breaks it (the explorer's panel shows it
# beside "holds" or "broken"; a counterexample's headline is "Rule broken: " and the title).
TITLES = {
    "hwm-majority": say("The HWM never exceeds what a majority held"),
    "read-above-hwm": say("No read above the serving node's HWM"),
    "hwm-monotonic": say("A node's HWM never moves back"),
    "committed-never-change": say("Committed entries never change"),
    "acked-in-final-logs": say("Every acknowledged write survives"),
    "logs-agree": say("Logs agree up to the HWM"),
    "truncation-safe": say("Truncation only removes conflicting entries"),
    "read-gate-strict": say("A read at or below the HWM is served"),
    "wal-truncation": say("Truncating the WAL leaves the log ending just before the cut"),
    "epoch-end": say("The leader answers where its log ends for the asked generation"),
    "epoch-truncation": say("A restarted follower cuts its log just after the leader's end index"),
    STUDENT_FAULT: say("No function of yours fails"),
    STUDENT_CALL_BROKEN: say("Every call of your functions keeps its exercise's rule"),
    NODE_STOPPED: say("No node stops"),
}
# A rule whose reasons are two rules in one: the headline is the one the run broke.
OLDER_ENTRY_TITLE = say("A leader raises its HWM only over an entry of its own generation")
