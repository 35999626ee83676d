"""A counterexample in words, in the lab's languages: what each step does, the rule broken (computed by the lab's
own rule, lab.core.monitor), and the call of the student's function that went wrong: its inputs, its result, the
exercise's rule it broke judged on those inputs (lab.core.judges), and what the node then did, read from the run's
own states. Every sentence is about the run as shown: what a node holds is what its log holds at that step, and what
a function was handed (the leader's match indexes) is said as such; nothing is said by comparison with an answer
the reader may not have. tests/test_explanations.py checks every number against the run."""

from __future__ import annotations

from lab.core import reasons
from lab.core.interface import (
    CHECK_READ, EPOCH_TRUNCATION_POINT, EXERCISE_OF, FOLLOWER_APPEND, HIGH_WATER_MARK, LEADER_EPOCH_END,
    ON_REPLICATION_RESPONSE, PLAN_TRUNCATION)
from lab.core.events import EPOCH_ANSWER, EPOCH_TRUNCATION, READ_REFUSED, READ_SERVED, WAL_TRUNCATED
from lab.core.monitor import Violation
from lab.core.reasons import Reason
from lab.core.rules import STATE_CHECKS
from lab.sim.world import NODE_STOPPED, STUDENT_CALL_BROKEN, STUDENT_FAULT
from lab.i18n import Joined, Text, say
from lab.i18n.steps import step_words

from lab.i18n.invariants import OLDER_ENTRY_TITLE, TITLES  # noqa: F401 (the rules as invariants, said)

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

# Strategies whose known flaw breaks the cluster's rules with no wrong call at all: the flaw is the lesson.
KNOWN_FLAWS = {"high-water-mark": say("This is the high-water-mark strategy's known flaw (KIP-101): a node that "
                                      "restarts cuts its log back to its own high-water mark, which may lag the "
                                      "leader's, and then keeps or loses entries by their index alone. That flaw is "
                                      "the lesson here; the leader-epoch strategy, KIP-101's answer, fixes it.")}


def title(v: Violation) -> Text:
    """The rule a violation broke, as an invariant: its title, or the part of a rule that broke (an older
    generation's entry under the mark is hwm-majority's second half)."""
    if getattr(getattr(v, "detail", None), "kind", None) == reasons.RULE_OLDER_ENTRY:
        return OLDER_ENTRY_TITLE
    return TITLES.get(v.check, v.title)


def is_state_rule(check: str) -> bool:
    """A rule of the cluster's state (lab.core.rules), not of one call's answer nor of the code failing."""
    return check in STATE_CHECKS


def narrate(words: tuple[str, ...], world) -> Text:
    """One step in words, told from the world just after it (lab.i18n.steps)."""
    head = words[0]
    node = words[3] if head in ("read", "write") else words[1] if len(words) > 1 else ""
    replica = world.replicas.get(node)
    return step_words(words, world.last_message if head in ("deliver", "drop", "duplicate") else None,
                      replica.generation if replica is not None else 0)


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


def wrong_call(v: Violation, calls: list[dict], upto: int | None = None) -> dict | None:
    """The call to blame: the latest one up to step `upto` that broke its exercise's rule (as lab.core.judges judges
    it), among the functions whose answer can break the rule broken first. A call that broke its rule only because it
    was handed another function's wrong answer (exercise 2 is handed exercise 1's) is not blamed: that function's
    call is. None when no call broke its rule."""
    suspects = SUSPECTS.get(v.check, ())
    wrong = [c for c in calls if c.get("wrong") and not c.get("uses") and (upto is None or c.get("step", 0) <= upto)]
    for call in reversed(wrong):
        if call["function"] in suspects:
            return call
    return wrong[-1] if wrong else None


# ---- what a node did in the step of a call, from the run's own states --------------------------------------------


def _node(status: dict, name: str) -> dict:
    return next((n for n in status.get("nodes") or [] if n["id"] == name), {})


def entries_text(log) -> str:
    """A log as a step says one: `[1 (g1), 2 (g2)]`."""
    return "[" + ", ".join(f"{e[0]} (g{e[1]})" for e in log) + "]"


def holders(status: dict, leader: str, k: int) -> list[str]:
    """The nodes whose log holds the leader's entries 1..k (the monitor's count of rule 1, from the logs)."""
    mine = [tuple(e[:2]) for e in _node(status, leader).get("log", [])[:k]]
    return [n["id"] for n in status.get("nodes") or [] if [tuple(e[:2]) for e in (n.get("log") or [])[:k]] == mine]


def did(call: dict, before: dict, after: dict, events: list[dict]) -> Reason | None:
    """What the node that made `call` did in that step, from its states before and after it and the step's events."""
    name, function = call["node"], call["function"]
    mine = [e for e in events if e.get("node") == name]
    now, was = _node(after, name), _node(before, name)
    if now.get("state") == "exited":
        return Reason(reasons.DID_STOP, node=name, why=now.get("exit_reason") or "?")
    if function in (HIGH_WATER_MARK, ON_REPLICATION_RESPONSE):
        start, end = was.get("hwm", 0), now.get("hwm", 0)
        if end > start:
            found = holders(after, name, end)
            return Reason(reasons.DID_RAISE_HWM, node=name, before=start, after=end, nodes=found, holders=len(found),
                          size=len(after.get("nodes") or []))
        return Reason(reasons.DID_KEEP_HWM, node=name, hwm=end)
    if function == CHECK_READ:
        for e in mine:
            if e["type"] == READ_SERVED:
                return Reason(reasons.DID_SERVE, node=name, index=e["index"], hwm=e["hwm"])
            if e["type"] == READ_REFUSED:
                return Reason(reasons.DID_REFUSE, node=name, index=e["index"], reason=e.get("reason") or "?")
        return None
    if function == PLAN_TRUNCATION:
        cut = [e for e in mine if e["type"] == WAL_TRUNCATED]
        return Reason(reasons.DID_END_STORAGE, node=name, log_end=cut[-1]["log_end"]) if cut else None
    if function == LEADER_EPOCH_END:
        answer = [e for e in mine if e["type"] == EPOCH_ANSWER]
        return Reason(reasons.DID_ANSWER_EPOCH, node=name, end=answer[-1]["end_index"],
                      generation=answer[-1]["generation"]) if answer else None
    if function == EPOCH_TRUNCATION_POINT:
        cut = [e for e in mine if e["type"] == EPOCH_TRUNCATION]
        if cut and cut[-1].get("cut") is not None:
            return Reason(reasons.DID_CUT, node=name, cut=cut[-1]["cut"], log_end=len(now.get("log") or []))
        if cut:
            return Reason(reasons.DID_KEEP_LOG, node=name, log_end=len(now.get("log") or []))
    log = now.get("log") or []  # follower_append, and any call whose node left no sign above: what its log holds
    return Reason(reasons.DID_HOLD, node=name, entries=entries_text(log)) if log \
        else Reason(reasons.DID_HOLD_NOTHING, node=name)


def call_line(call: dict, story) -> list[Text]:
    """The call that went wrong, judged on its own inputs, and what the run did next (when the run is known)."""
    values = dict(step=call.get("step", "?"), node=call["node"], function=call["function"],
                  number=EXERCISE_OF.get(call["function"], "?"), inputs=call["inputs"],
                  result=call.get("result", "?"), why=call["why"])
    lines = [say("The call of your function that went wrong, at step {step} on {node}: {function}({inputs}) returned "
                 "{result} (exercise {number}); judged on its own inputs, {why}.", **values)]
    step = call.get("step")
    if story is not None and isinstance(step, int) and 1 <= step < len(story.states):
        then = did(call, story.states[step - 1], story.states[step], story.events[step - 1])
        if then is not None:
            lines.append(say("What the run did in that step: {then}.", then=then))
    return lines


def kind_line(v: Violation) -> Text | None:
    """Which kind of rule the counterexample shows (docs/student-guide.md says the same)."""
    if is_state_rule(v.check):
        return say("A rule of the cluster's state: the run as shown breaks it, whatever the code answered.")
    if v.check in (STUDENT_CALL_BROKEN, "read-gate-strict", "epoch-end", "epoch-truncation"):
        return say("A rule of one function's answers: the call is judged on its own inputs. No rule of the cluster's "
                   "state broke in these steps.")
    return None


def explanation(v: Violation, steps: list[Text], calls: list[dict], *, show: int = 25, students: bool = True,
                story=None, truncation: str | None = None) -> Joined:
    """The whole story: the rule, the steps (numbered), the rule broken at the last one, the call to blame and what
    the run did with its answer. `students`: whether any function of the run is a student's (else the reference
    answers broke the rule); `story`: the run's states (lab.explore.counterexample.Story), for what a node did;
    `truncation`: the strategy the run used (a strategy's known flaw is said as the lesson)."""
    lines: list = [say("Rule broken: {title}", title=title(v))]
    kind = kind_line(v)
    if kind is not None:
        lines.append(kind)
    lines.append(say("The one step that leads there:") if len(steps) == 1  # (so {steps} is never 1)
                 else say("The {steps} steps that lead there:", steps=len(steps)))
    for number, text in enumerate(steps[-show:], start=max(1, len(steps) - show + 1)):
        lines.append(Joined([f"  {number}. ", text], ""))
    if v.check == STUDENT_CALL_BROKEN:
        call = dict(v.facts)["call"]
        judged = [c for c in calls if c.get("wrong") and c["function"] == call.function
                  and c.get("step") == len(steps)]
        lines += call_line(judged[0], story) if judged else [
            say("After step {step}: {what}.", step=len(steps), what=rule_words(v))]
        return Joined(lines, "\n")
    lines.append(say("After step {step}: {what}.", step=len(steps), what=rule_words(v)))
    if v.check in (STUDENT_FAULT, NODE_STOPPED):
        return Joined(lines, "\n")
    call = wrong_call(v, calls, len(steps))
    if call is not None:
        lines += call_line(call, story)
    elif truncation in KNOWN_FLAWS:
        lines.append(KNOWN_FLAWS[truncation])
    elif students:
        lines.append(say("No single call of your functions in this run broke its exercise's rule: the rule breaks "
                         "through the steps above."))
    else:
        lines.append(say("The reference answers break this rule in this run: a fault of the lab."))
    return Joined(lines, "\n")
