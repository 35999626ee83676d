"""A counterexample in words, in the lab's languages: what each step does, the rule broken (computed by the lab's
own rule, lab.core.monitor) and the call of the student's function that went wrong, with its inputs, its result and
the exercise's rule it broke (lab.core.judges): nothing is said by comparison with an answer the reader may not have."""

from __future__ import annotations

from lab.core.monitor import Violation
from lab.sim.world import STUDENT_CALL_BROKEN, STUDENT_FAULT
from lab.i18n import Joined, Text, say
from lab.i18n.steps import record, step_words
from lab.core.interface import (
    CHECK_READ, EPOCH_TRUNCATION_POINT, FOLLOWER_APPEND, HIGH_WATER_MARK, LEADER_EPOCH_END, ON_REPLICATION_RESPONSE,
    PLAN_TRUNCATION)

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
    STUDENT_FAULT: say("A function of yours failed"),
    STUDENT_CALL_BROKEN: say("A call of your function broke its exercise's rule"),
    "node-exited": say("A node stopped"),
}

# The functions whose wrong answer can break each rule, the likeliest first.
SUSPECTS = {
    "hwm-majority": (FOLLOWER_APPEND, ON_REPLICATION_RESPONSE, HIGH_WATER_MARK),
    "read-above-hwm": (CHECK_READ,),
    "read-gate-strict": (CHECK_READ,),
    "truncation-safe": (FOLLOWER_APPEND, EPOCH_TRUNCATION_POINT, LEADER_EPOCH_END),
    "wal-truncation": (PLAN_TRUNCATION,),
    "epoch-end": (LEADER_EPOCH_END,),
    "epoch-truncation": (EPOCH_TRUNCATION_POINT, LEADER_EPOCH_END),
}


def narrate(words: tuple[str, ...], world) -> Text:
    """One step in words, told from the world just after it (lab.i18n.steps)."""
    head = words[0]
    node = words[3] if head in ("read", "write") else words[1] if len(words) > 1 else ""
    replica = world.replicas.get(node)
    return step_words(words, world.last_message if head in ("deliver", "drop", "duplicate") else None,
                      replica.generation if replica is not None else 0)


def step_record(words: tuple[str, ...], world) -> dict:
    """One step as data, taken from the world just before it (lab.i18n.steps.record): the message it moves, and the
    generation its node will have (a campaign is forced: the next one)."""
    head = words[0]
    node = words[3] if head in ("read", "write") else words[1] if len(words) > 1 else ""
    replica = world.replicas.get(node)
    generation = replica.generation + (head == "campaign") if replica is not None else 0
    return record(words, world.in_flight(words) if head in ("deliver", "drop", "duplicate") else None, generation)


def rule_words(v: Violation) -> Text:
    """The rule broken, in words: the monitor's reason (lab.core.reasons, said by its kind in any language), or for
    a student's fault the call that failed."""
    f = dict(v.facts)
    if v.check == STUDENT_FAULT:
        fault = f["fault"]
        values = dict(function=fault.function, inputs=fault.inputs, detail=fault.detail, where=fault.where or "?")
        if fault.kind == "timeout":
            return say("{function}({inputs}) did not return within {detail} ({where})", **values)
        if fault.kind == "wrong type":
            return say("{function}({inputs}) returned {detail} ({where})", **values)
        return say("{function}({inputs}) raised {detail} ({where})", **values)
    return v.detail


def wrong_call(v: Violation, calls: list[dict]) -> dict | None:
    """The call to blame: the latest one that broke its exercise's rule (as lab.core.judges judges it), among the
    functions whose answer can break the rule broken first. None when no call broke its rule."""
    suspects = SUSPECTS.get(v.check, ())
    wrong = [c for c in calls if c.get("wrong") and not c.get("uses")]  # (a call handed a wrong answer: that one)
    for call in reversed(wrong):
        if call["function"] in suspects:
            return call
    return wrong[-1] if wrong else None


def explanation(v: Violation, steps: list[Text], calls: list[dict], *, show: int = 25,
                students: bool = True) -> Joined:
    """The whole story: the rule, the steps (numbered), the rule broken at the last one, the call to blame.
    `students`: whether any function of the run is a student's (else the reference answers broke the rule)."""
    lines: list = [say("Rule broken: {title}", title=TITLES.get(v.check, v.check))]
    lines.append(say("The one step that leads there:") if len(steps) == 1  # (so {steps} is never 1)
                 else say("The {steps} steps that lead there:", steps=len(steps)))
    for number, text in enumerate(steps[-show:], start=max(1, len(steps) - show + 1)):
        lines.append(Joined([f"  {number}. ", text], ""))
    lines.append(say("After step {step}: {what}.", step=len(steps), what=rule_words(v)))
    if v.check in (STUDENT_FAULT, STUDENT_CALL_BROKEN):
        return Joined(lines, "\n")
    call = wrong_call(v, calls)
    if call is not None:
        lines.append(say("The call of your function that went wrong: on {node}, {function}({inputs}) returned "
                         "{result}: {why}.", node=call["node"], function=call["function"], inputs=call["inputs"],
                         result=call.get("result", "?"), why=call["why"]))
    elif students:
        lines.append(say("No single call of your functions in this run broke its exercise's rule: the rule breaks "
                         "through the steps above."))
    else:
        lines.append(say("The reference answers break this rule in this run: a fault of the lab."))
    return Joined(lines, "\n")
