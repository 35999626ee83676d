"""Every number an explanation of the explorer says, and every line the replay's feed says of the student's calls,
checked against the run's own states (issue 51): a replay of its own, written apart from lab.explore, gives each
step's cluster status before and after, its events, the message it moved and the calls of the student's functions
with their arguments; each sentence of the explanation is a Text or a Reason whose values are then checked one by
one against those states, never by calling the code that wrote the sentence. A sentence of a kind nobody checks here
is a problem too, so that no new sentence goes unchecked. Used by tests/test_explanations.py and bench/explore.py."""

from __future__ import annotations

from dataclasses import dataclass, field

from lab.core import events as ev
from lab.core import judges, reasons
from lab.core.interface import EXERCISE_OF
from lab.core.reasons import Reason
from lab.i18n import Joined, Text
from lab.i18n.steps import DELIVERIES, MOVES, STEPS
from lab.sim.steps import message_values


@dataclass
class Run:
    """The run of a counterexample, step by step (states[k]: after step k; states[0]: before the first)."""

    nodes: int
    truncation: str
    words: list = field(default_factory=list)  # each step's command
    states: list = field(default_factory=list)
    events: list = field(default_factory=list)  # events[k - 1]: step k's
    moved: list = field(default_factory=list)  # moved[k - 1]: the message step k delivered, dropped or duplicated
    heard: list = field(default_factory=list)  # (node, step, Call) of every call of the student's functions
    violations: list = field(default_factory=list)  # violations[k - 1]: the rules step k broke (checks)


def replay(config, choices) -> Run:
    """The choices played one by one on a world of `config` (lab.explore.search.Config) that records everything."""
    world = config.world(fast=False, record_calls=True)
    run = Run(config.nodes, config.truncation, states=[world.status()])
    for words in choices:
        seen = len(world.events)
        done = world.apply(tuple(words))
        assert done is not None, f"step {len(run.words) + 1} ({' '.join(words)}) cannot be done"
        run.words.append(tuple(done))
        run.moved.append(world.last_message if words[0] in MOVES else None)
        run.violations.append([v.check for v in world.violations()])
        run.states.append(world.status())
        run.events.append(list(world.events[seen:]))
    run.heard = list(world.heard)
    return run


# ---- what a state holds, read here from the status itself -----------------------------------------------------

def node(status: dict, name: str) -> dict:
    return next(n for n in status["nodes"] if n["id"] == name)


def log_of(status: dict, name: str) -> list[tuple[int, int]]:
    return [(e[0], e[1]) for e in node(status, name)["log"]]


def prefix_holders(status: dict, leader: str, k: int) -> list[str]:
    mine = log_of(status, leader)[:k]
    return [n["id"] for n in status["nodes"] if log_of(status, n["id"])[:k] == mine]


def disk_holders(status: dict, leader: str, k: int) -> list[str]:
    """The nodes whose disk holds the leader's entries 1..k: the part of each log the status says is on disk (on_disk)."""
    mine = log_of(status, leader)[:k]
    return [n["id"] for n in status["nodes"] if log_of(status, n["id"])[:min(k, n["on_disk"])] == mine]


def count_at_least(values, index: int) -> int:
    return sum(1 for v in values if v >= index)


# ---- the checks -------------------------------------------------------------------------------------------------

class Problems(list):
    def expect(self, ok: bool, what: str) -> None:
        if not ok:
            self.append(what)


def parts(text) -> list:
    """A Joined's parts (an explanation is one, its lines each a Text or a Joined of a number and a step)."""
    return list(text.parts) if isinstance(text, Joined) else [text]


def check_explanation(explanation, run: Run, violation) -> list[str]:
    """What in `explanation` (lab.explore.explain.explanation) disagrees with `run`, in words; [] when nothing."""
    from lab.explore.explain import KNOWN_FLAWS, OLDER_ENTRY_TITLE, TITLES

    problems = Problems()
    steps = len(run.words)
    lines = parts(explanation)
    numbered = [line for line in lines if isinstance(line, Joined) and len(line.parts) == 2
                and str(line.parts[0]).strip().rstrip(".").isdigit()]
    numbers = [int(str(n.parts[0]).strip().rstrip(".")) for n in numbered]
    shown = list(range(max(1, steps - len(numbered) + 1), steps + 1))  # (a long run shows its last steps)
    problems.expect(numbers == shown and (numbers[:1] == [1] or len(numbered) >= 25),
                    f"the steps are numbered {numbers[:3]}...{numbers[-3:]}, of a run of {steps}")
    for k, line in zip(numbers, numbered):
        if 1 <= k <= steps:
            check_step(line.parts[1], run, k, problems)
    for line in lines:
        if line in numbered:
            continue
        msgid = getattr(line, "msgid", None)
        args = getattr(line, "args", {})
        if msgid == "Rule broken: {title}":
            wanted = OLDER_ENTRY_TITLE if getattr(violation.detail, "kind", None) == reasons.RULE_OLDER_ENTRY \
                else TITLES.get(violation.check, violation.title)
            problems.expect(str(args["title"]) == str(wanted), f"headline {args['title']} for {violation.check}")
            problems.expect(violation.check in run.violations[-1], f"the last step broke {run.violations[-1]}, "
                                                                   f"not {violation.check}")
        elif msgid in ("The one step that leads there:", "The {steps} steps that lead there:"):
            problems.expect(args.get("steps", 1) == steps, f"{args.get('steps', 1)} steps said, {steps} played")
        elif msgid == "After step {step}: {what}.":
            problems.expect(args["step"] == steps, f"'after step {args['step']}' of a run of {steps}")
            check_reason(args["what"], run, steps, problems)
        elif msgid and msgid.startswith("The call of your function that went wrong, at step "):
            check_call_line(args, run, problems)
        elif msgid == "What the run did in that step: {then}.":
            pass  # checked with its call line, whose step it speaks of
        elif msgid == "A rule of the cluster's state: the run as shown breaks it, whatever the code answered.":
            from lab.core.rules import STATE_CHECKS
            problems.expect(violation.check in STATE_CHECKS, f"{violation.check} said a rule of the cluster's state")
        elif msgid and msgid.startswith("A rule of one function's answers"):
            from lab.explore.search import CLUSTER_RULES
            broken = [c for step in run.violations for c in step if c in CLUSTER_RULES]
            problems.expect(not broken, f"'no rule of the cluster's state broke', but {broken} did")
        elif msgid and msgid.startswith("No single call of your functions"):
            problems.expect(not any(call.why for _, s, call in run.heard if s <= steps),
                            "'no single call broke its rule', but one did")
        elif line in KNOWN_FLAWS.values():
            problems.expect(run.truncation in KNOWN_FLAWS and not any(call.why for _, _, call in run.heard),
                            f"a known flaw said under {run.truncation}, with a wrong call")
        elif msgid and msgid.startswith("The reference answers break"):
            problems.expect(not run.heard, "'the reference answers' while a student's function was called")
        else:
            problems.append(f"a line nobody checks: {line!s}")
    for line in lines:  # what the run did, beside its call line
        if getattr(line, "msgid", None) == "What the run did in that step: {then}.":
            call = next((getattr(x, "args", {}) for x in lines if getattr(x, "msgid", "") and
                         x.msgid.startswith("The call of your function that went wrong")), None)
            problems.expect(call is not None, "'what the run did' without a call")
            if call is not None:
                check_did(line.args["then"], run, call["step"], call["node"], problems)
    return list(problems)


def check_step(text: Text, run: Run, k: int, problems: Problems) -> None:
    """Step k's words: the command played, the message it moved with the values it had, the node's generation."""
    words, msgid, args = run.words[k - 1], text.msgid, text.args
    head = words[0]
    if head in MOVES:
        src, dst = words[1].split("->")
        kind, values = message_values(run.moved[k - 1])
        problems.expect(msgid == DELIVERIES[head, kind] and args == {"src": src, "dst": dst, **values},
                        f"step {k} says {text!s}, but it moved {run.moved[k - 1]!r} {src}->{dst}")
    elif head in ("campaign", "heartbeat"):
        name = words[1]
        generation = node(run.states[k], name)["generation"]
        problems.expect(msgid == STEPS[head] and args == {"node": name, "generation": generation},
                        f"step {k} says {text!s}; {name} is in generation {generation}")
    elif head == "write":
        problems.expect(msgid == STEPS["write"] and args == {"payload": words[1], "node": words[3]},
                        f"step {k} says {text!s} of {' '.join(words)}")
    elif head == "read":
        problems.expect(msgid == STEPS["read"] and args == {"index": int(words[1]), "node": words[3]},
                        f"step {k} says {text!s} of {' '.join(words)}")
    elif head in ("kill", "restart", "pause", "resume"):
        key = "kill lose-unsynced" if "lose-unsynced" in words else head
        problems.expect(msgid == STEPS[key] and args == {"node": words[1]}, f"step {k} says {text!s}")
    elif head in ("cut", "heal"):
        problems.expect(msgid == STEPS[head] and args == {"link": words[1] if len(words) > 1 else "*"},
                        f"step {k} says {text!s}")
    elif head == "sync":  # "its log is on its disk": every entry of its log, after the step
        after = node(run.states[k], words[1])
        problems.expect(msgid == STEPS["sync"] and args == {"node": words[1]} and after["on_disk"] == len(after["log"]),
                        f"step {k} says {text!s}; {words[1]} has {after['on_disk']} of {len(after['log'])} on its disk")
    else:
        problems.append(f"step {k}: a step nobody checks: {text!s}")


def _events(run: Run, k: int, kind: str, name: str | None = None) -> list[dict]:
    return [e for e in run.events[k - 1] if e["type"] == kind and (name is None or e.get("node") == name)]


def check_reason(reason, run: Run, k: int, problems: Problems) -> None:
    """A rule broken at step k, said by the monitor's reason: each value checked against step k's states."""
    if isinstance(reason, Text) and not isinstance(reason, Reason):  # a student's fault, said as a Text
        problems.expect(reason.msgid.startswith("{function}({inputs}) "), f"a fault said as {reason!s}")
        stopped = [n["id"] for n in run.states[k]["nodes"] if n["state"] == "exited"]
        problems.expect(bool(stopped), f"a fault said at step {k}, where no node stopped")
        return
    if not isinstance(reason, Reason):
        problems.append(f"a rule said in plain words, unchecked: {reason}")
        return
    v, after, before = reason.values, run.states[k], run.states[k - 1]
    kind = reason.kind.removesuffix("_one").removesuffix("_several")
    if kind == reasons.RULE_MINORITY:  # (a majority of disks: the monitor's count, lab.sim.world.World.holders)
        holders = disk_holders(after, v["leader"], v["index"])
        leader = node(after, v["leader"])
        problems.expect(leader["hwm"] == v["index"] and leader["generation"] == v["generation"],
                        f"{reason}: the leader's mark is {leader['hwm']} in generation {leader['generation']}")
        problems.expect(list(v["nodes"]) == holders and v["holders"] == len(holders),
                        f"{reason}: the disks show {holders} holding index {v['index']}")
        size = len(after["nodes"])
        problems.expect(v["size"] == size and v["majority"] == size // 2 + 1 and len(holders) < size // 2 + 1,
                        f"{reason}: {size} nodes")
    elif kind == reasons.RULE_OLDER_ENTRY:
        leader = node(after, v["leader"])
        entry = dict(log_of(after, v["leader"])).get(v["index"])
        problems.expect(leader["hwm"] == v["index"] and leader["generation"] == v["generation"]
                        and entry == v["entry_generation"] != v["generation"],
                        f"{reason}: mark {leader['hwm']}, generation {leader['generation']}, entry of {entry}")
    elif kind in (reasons.SERVED_ABOVE_HWM, reasons.RULE_REFUSED_AT_OR_BELOW):
        wanted = ev.READ_SERVED if kind == reasons.SERVED_ABOVE_HWM else ev.READ_REFUSED
        found = _events(run, k, wanted, v["node"])
        problems.expect(any(e["index"] == v["index"] for e in found), f"{reason}: no such read at step {k}")
        problems.expect(node(after, v["node"])["hwm"] == v["hwm"],
                        f"{reason}: {v['node']}'s mark is {node(after, v['node'])['hwm']}")
    elif kind == reasons.RULE_HWM_BACK:
        problems.expect(node(before, v["node"])["hwm"] == v["before"] and node(after, v["node"])["hwm"] == v["after"],
                        f"{reason}: the mark went {node(before, v['node'])['hwm']} -> {node(after, v['node'])['hwm']}")
    elif kind in (reasons.RULE_ACKED_LOST, reasons.RULE_COMMITTED_CHANGED, reasons.HOLDS_OTHER_GENERATION):
        held = dict(log_of(after, v["node"])).get(v["index"])
        now = v.get("now", v.get("generation"))
        committed = [e for step in run.events[:k] for e in step if e["type"] == ev.HWM_CHANGED]
        problems.expect(held == now or any(e.get("node") == v["node"] and any(c[0] == v["index"] and c[1] == now
                                                                           for c in e.get("committed", ()))
                                           for e in committed),
                        f"{reason}: {v['node']} holds generation {held} at index {v['index']}")
        if "was" in v:
            problems.expect(any(e.get("node") == v.get("first") and any(c[0] == v["index"] and c[1] == v["was"]
                                                                        for c in e.get("committed", ()))
                                for e in committed), f"{reason}: {v.get('first')} never committed that")
    elif kind in (reasons.RULE_REMOVED_COMMITTED, reasons.RULE_REMOVED_ACKED, reasons.RULE_REMOVED_SAME_GENERATION):
        cut = _events(run, k, ev.TRUNCATED, v["node"])
        problems.expect(any(any(r[0] == v["index"] for r in e.get("removed", ())) for e in cut),
                        f"{reason}: {v['node']} removed no index {v['index']} at step {k}")
        if kind == reasons.RULE_REMOVED_SAME_GENERATION:
            problems.expect(dict(log_of(before, v["node"])).get(v["index"]) == v["generation"],
                            f"{reason}: the entry was of another generation")
    elif kind == reasons.RULE_WAL_CUT:
        cut = _events(run, k, ev.WAL_TRUNCATED, v["node"])
        problems.expect(any(e["from_index"] == v["index"] and e["log_end"] == v["log_end"] for e in cut),
                        f"{reason}: no such cut at step {k}")
    elif kind == reasons.RULE_EPOCH_END:
        found = _events(run, k, ev.EPOCH_ANSWER, v["node"])
        problems.expect(any(e["end_index"] == v["index"] and e["generation"] == v["generation"] for e in found),
                        f"{reason}: no such answer at step {k}")
    elif kind == reasons.RULE_EPOCH_CUT:
        found = _events(run, k, ev.EPOCH_TRUNCATION, v["node"])
        problems.expect(any(e["end_index"] == v["end"] and e["log_end"] == v["log_end"] and str(e.get("cut")) ==
                            str(v["cut"]) for e in found), f"{reason}: no such cut at step {k}")
    elif kind == reasons.RULE_HWM_BEYOND_LOG:
        n = node(after, v["node"])
        problems.expect(n["hwm"] == v["index"] and len(n["log"]) == v["log_end"] and v["index"] > v["log_end"],
                        f"{reason}: mark {n['hwm']}, log end {len(n['log'])}")
    elif kind == reasons.RULE_LOGS_DISAGREE:
        a, b = dict(log_of(after, v["a"])), dict(log_of(after, v["b"]))
        problems.expect(a.get(v["index"]) != b.get(v["index"]) and
                        min(node(after, v["a"])["hwm"], node(after, v["b"])["hwm"]) >= v["index"],
                        f"{reason}: the logs at index {v['index']}: {a.get(v['index'])}, {b.get(v['index'])}")
    elif kind == reasons.STOPPED_BECAUSE:
        problems.expect(node(after, v["node"])["state"] == "exited", f"{reason}: {v['node']} did not stop")
    else:
        problems.append(f"a rule's reason nobody checks: {reason.kind}: {reason}")


def _call_at(run: Run, step, name: str, function: str):
    found = [call for n, s, call in run.heard if s == step and n == name and call.function == function and call.why]
    return found[0] if found else None


def check_why(call, why, problems: Problems) -> None:
    """The rule a call broke, judged again on its own arguments, and its counts counted again from them."""
    again = judges.judge(call.function, call.args, call.result, call.saved)
    problems.expect(again is not None and again.kind == why.kind and again.values == why.values,
                    f"{call.function}'s rule said as {why}, judged again: {again}")
    if why.kind.removesuffix("_one") in (reasons.HWM_NOT_HELD, reasons.HWM_NOT_LARGEST, reasons.HWM_NOT_ADVANCED):
        # exercise 1 is judged on the match indexes it was handed; exercise 2 on the table as its call left it
        values = list(call.saved) if call.function == "high_water_mark" else list(dict(call.args[0]).values())
        v = why.values
        problems.expect(v["holders"] == count_at_least(values, v["index"]) and v["size"] == len(values) and
                        v["majority"] == len(values) // 2 + 1,
                        f"{why}: the match indexes {values} count otherwise")
    if why.kind in (reasons.SERVED_ABOVE, reasons.REFUSED_AT_OR_BELOW):
        problems.expect((why.values["index"], why.values["hwm"]) == tuple(call.args[:2]), f"{why}: {call.args}")


def check_call_line(args: dict, run: Run, problems: Problems) -> None:
    call = _call_at(run, args["step"], args["node"], args["function"])
    problems.expect(call is not None, f"no wrong call of {args['function']} on {args['node']} at step {args['step']}")
    if call is None:
        return
    from lab.core.guard import describe, describe_call
    shown = describe_call(call.args if call.saved is None else (call.saved, *call.args[1:]))
    problems.expect(args["inputs"] == shown and args["result"] == describe(call.result),
                    f"the call said as ({args['inputs']}) -> {args['result']}, made as ({shown}) -> "
                    f"{describe(call.result)}")
    problems.expect(args["number"] == EXERCISE_OF[call.function], f"{call.function} said of exercise {args['number']}")
    check_why(call, args["why"], problems)


def check_did(then, run: Run, k: int, name: str, problems: Problems) -> None:
    """What a node did at step k, each value read again from the states and events of that step."""
    v, before, after = then.values, run.states[k - 1], run.states[k]
    kind = then.kind.removesuffix("_one")
    n = node(after, name)
    if kind == reasons.DID_RAISE_HWM:
        holders = prefix_holders(after, name, v["after"])
        problems.expect(node(before, name)["hwm"] == v["before"] < v["after"] == n["hwm"],
                        f"{then}: the mark went {node(before, name)['hwm']} -> {n['hwm']}")
        problems.expect(list(v["nodes"]) == holders and v["holders"] == len(holders) and
                        v["size"] == len(after["nodes"]), f"{then}: the logs show {holders}")
    elif kind == reasons.DID_KEEP_HWM:
        problems.expect(n["hwm"] == v["hwm"] == node(before, name)["hwm"],
                        f"{then}: the mark went {node(before, name)['hwm']} -> {n['hwm']}")
    elif kind == reasons.DID_HOLD:
        shown = "[" + ", ".join(f"{i} (g{g})" for i, g in log_of(after, name)) + "]"
        problems.expect(v["entries"] == shown, f"{then}: the log is {shown}")
    elif kind == reasons.DID_HOLD_NOTHING:
        problems.expect(not n["log"], f"{then}: the log holds {log_of(after, name)}")
    elif kind == reasons.DID_SERVE:
        problems.expect(any(e["index"] == v["index"] and e["hwm"] == v["hwm"]
                            for e in _events(run, k, ev.READ_SERVED, name)), f"{then}: no such read served")
    elif kind == reasons.DID_REFUSE:
        problems.expect(any(e["index"] == v["index"] for e in _events(run, k, ev.READ_REFUSED, name)),
                        f"{then}: no such read refused")
    elif kind == reasons.DID_END_STORAGE:
        problems.expect(any(e["log_end"] == v["log_end"] for e in _events(run, k, ev.WAL_TRUNCATED, name)),
                        f"{then}: no such cut")
    elif kind == reasons.DID_ANSWER_EPOCH:
        problems.expect(any(e["end_index"] == v["end"] and e["generation"] == v["generation"]
                            for e in _events(run, k, ev.EPOCH_ANSWER, name)), f"{then}: no such answer")
    elif kind in (reasons.DID_CUT, reasons.DID_KEEP_LOG):
        cuts = _events(run, k, ev.EPOCH_TRUNCATION, name)
        problems.expect(bool(cuts) and len(n["log"]) == v["log_end"], f"{then}: the log ends at {len(n['log'])}")
        if kind == reasons.DID_CUT:
            problems.expect(any(e.get("cut") == v["cut"] for e in cuts), f"{then}: no cut at {v['cut']}")
    elif kind == reasons.DID_STOP:
        problems.expect(n["state"] == "exited", f"{then}: {name} is {n['state']}")
    else:
        problems.append(f"what a node did, said in a way nobody checks: {then.kind}")


def check_feed(texts: list, events: list[dict], run: Run) -> list[str]:
    """The replay's feed (web.narrate) of the counterexample's trace: each line of a call of the student's that
    broke a rule names the rule's exercise and says a why that is the call's own; a call that rested on another
    function's wrong answer names that function and its exercise, and that function did answer wrong just before
    on the same node."""
    problems = Problems()
    for text, e in zip(texts, events):
        if e["type"] == ev.RULE_BROKEN:
            problems.expect(1 <= e.get("step", 0) <= len(run.words), f"rule_broken at step {e.get('step')}")
        if e["type"] != ev.STUDENT_CALL or not (e.get("why") or e.get("uses")):
            continue
        args = getattr(text, "args", {})
        if e.get("uses"):
            problems.expect(args.get("used") == e["uses"] and args.get("number") == EXERCISE_OF[e["uses"]],
                            f"the feed blames {args.get('used')} (exercise {args.get('number')}) for {e['uses']}")
            problems.expect(_call_at(run, e["step"], e["node"], e["uses"]) is not None,
                            f"{e['uses']} gave no wrong answer at step {e['step']} on {e['node']}")
            continue
        problems.expect(args.get("number") == EXERCISE_OF[e["function"]],
                        f"the feed says exercise {args.get('number')} of {e['function']}")
        call = _call_at(run, e["step"], e["node"], e["function"])
        problems.expect(call is not None, f"no wrong call of {e['function']} at step {e['step']} on {e['node']}")
        if call is not None:
            check_why(call, args["why"], problems)
    return list(problems)


def one_minimal(config, choices, rule: str) -> list[str]:
    """The steps that can be left out with `rule` still broken (as the shrinker and simulate --script replay a
    run: a step that cannot be done once another is gone is skipped). [] when the run is 1-minimal for its rule."""
    from lab.explore.search import run as play

    left = []
    for position in range(len(choices)):
        _, violation, _ = play(config, choices[:position] + choices[position + 1:])
        if violation is not None and violation.check == rule:
            left.append(f"step {position + 1} ({' '.join(choices[position])})")
    return left
