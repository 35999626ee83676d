"""The same counterexample run twice: replayed by `hwm-lab simulate --script` in a fresh process with another hash
seed, it must reach the same rule with the same answers. A function of the student's whose answer depends on
something outside its arguments (a global it changes, the clock, random numbers, the order of a set) is named with
the call where its two answers differed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from lab.core.events import STUDENT_CALL
from lab.i18n import Text, say
from lab.ports.trace import parse_line

OTHER_HASH_SEED = "2718"  # any seed but the search's own: a set of strings comes out in another order
TIMEOUT = 120.0  # seconds the replay may take (a counterexample is a few dozen steps)


def replayed_elsewhere(script: Path, impl: str) -> tuple[dict | None, list[dict]]:
    """The verdict (violation as --json prints it) and the student's calls of the script replayed in a fresh
    process, or (None, []) when it could not run there."""
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "trace"
        env = {**os.environ, "PYTHONHASHSEED": OTHER_HASH_SEED,
               "PYTHONPATH": os.pathsep.join(p for p in sys.path if p and Path(p).is_dir())}
        try:
            done = subprocess.run([sys.executable, "-m", "lab.cli", "simulate", "--script", str(script), "--impl",
                                   impl, "--out", str(trace), "--json"], capture_output=True, text=True, env=env,
                                  timeout=TIMEOUT)
            verdict = json.loads(done.stdout.strip().splitlines()[-1]) if done.stdout.strip() else None
        except (subprocess.TimeoutExpired, ValueError, IndexError):
            return None, []
        calls = []
        for path in sorted(trace.glob("events-*.jsonl")):
            for raw in path.read_text(encoding="utf-8").splitlines():
                event = parse_line(raw)
                if event.get("type") == STUDENT_CALL:
                    calls.append(event)
        return (verdict or {}).get("violation"), calls


def first_difference(here: list[dict], there: list[dict]) -> tuple[dict, dict] | None:
    """The first call, in the order each node made them, whose inputs were the same in both runs and whose answers
    were not (what came before it was the same, so its answer depends on something outside its arguments)."""
    def by_node(calls):
        out: dict[str, list[dict]] = {}
        for c in calls:
            out.setdefault(c["node"], []).append(c)
        return out

    mine, theirs = by_node(here), by_node(there)
    found = []
    for node, calls in mine.items():
        for a, b in zip(calls, theirs.get(node, [])):
            if a["function"] != b["function"] or a["inputs"] != b["inputs"]:
                break  # the runs went apart before: an earlier call differed, on this node or another
            if a["result"] != b["result"]:
                found.append((a["step"], a, b))
                break
    return min(found, key=lambda f: f[0])[1:] if found else None


def called_twice(found) -> tuple | None:
    """The run replayed here with each call of the student's functions made twice, on the same inputs: the first
    call whose two answers differed (node, step, function, inputs, first, second), or None."""
    world = found.config.world()
    world.twice = True
    try:
        for words in found.choices:
            world.apply(tuple(words))
            if world.differed is not None:
                break
    except Exception:  # the run fails the same way it did in the search; the answers until then were compared
        pass
    return world.differed


def verdict(found, calls: list[dict], script: Path, impl: str) -> tuple[Text | None, dict]:
    """A sentence when the same run does not end the same (None when it does), and the facts for --json: each call
    made twice here, then the whole run replayed in a fresh process with another hash seed."""
    differed = called_twice(found)
    if differed is not None:
        node, step, function, inputs, first, second = differed
        facts = {"same": False, "call": {"function": function, "node": node, "step": step, "inputs": inputs,
                                         "first": first, "second": second}}
        return say("Your {function}, called at step {step} on {node} with {inputs}, answered {first}, then {second} "
                   "when called again with the same inputs: its answer depends on something outside its arguments "
                   "(a global it changes, the clock, random numbers).", function=function, step=step, node=node,
                   inputs=inputs, first=first, second=second), facts
    violation, there = replayed_elsewhere(script, impl)
    if violation is None and not there:
        return None, {"same": None}  # it could not run there: nothing to say
    same_end = violation is not None and violation.get("detail") == found.violation.as_dict()["detail"]
    differing = first_difference(calls, there)
    facts = {"same": same_end and differing is None}
    if differing is not None:
        a, b = differing
        facts["call"] = {"function": a["function"], "node": a["node"], "step": a["step"], "inputs": a["inputs"],
                         "first": a["result"], "second": b["result"]}
        return say("Your {function}, called at step {step} on {node} with {inputs}, answered {here} here and "
                   "{there} when the same run was replayed in a fresh process: its answer depends on something "
                   "outside its arguments (a global it changes, the clock, random numbers, the order of a set).",
                   function=a["function"], step=a["step"], node=a["node"], inputs=a["inputs"], here=a["result"],
                   there=b["result"]), facts
    if not same_end:
        return say("Replayed in a fresh process, the same run did not end on the same broken rule: something "
                   "outside the lab's choices decides it."), facts
    return None, facts
