"""Shrink a failing run: delta debugging over its choices (Zeller's ddmin, as Hypothesis deletes choices) until
no single step, nor any two, can be removed with the same rule still broken; then the same run on a smaller
cluster, when it breaks the rule there too in no more steps.

A run shown for a rule of the cluster's state (lab.core.rules) is replayed with only those rules ending it: a call
of the student's that breaks its exercise's rule on the way is named, not the end. A run found for a call's rule
alone is first moved toward the cluster: the run with a step or two left out, then a short search bounded by count,
may break a rule of the cluster's state, the lesson a student needs (the fault in the cluster, not only in the call).
What is shown is 1-minimal for its rule: no single step can be left out with that rule still broken (a step that
cannot be done once another is gone is skipped, as `hwm-lab simulate --script` skips it)."""

from __future__ import annotations

from dataclasses import replace
from itertools import combinations

from lab.core.config import node_names
from lab.explore.search import CLUSTER_RULES, Found, run
from lab.sim.world import NODE_STOPPED, STUDENT_FAULT

FEWEST_NODES = 3  # the smallest cluster a counterexample is moved to
ON_A_LINK = ("deliver", "drop", "duplicate", "cut", "heal")  # steps whose second word is a link (A->B, A<->B)
# The search toward a rule of the cluster's state, after a call's rule: bounded by count, so that the same seed finds
# the same run on any machine (about 2 s at most, when nothing is found)
TOWARD_STATES, TOWARD_WALKS, TOWARD_PAIRS = 2000, 200, 400


def _plain(words: tuple[str, ...]) -> tuple[str, ...]:
    """A write without its payload: payloads are numbered again (v1, v2, ...) in the shrunk run."""
    return ("write", words[3]) if words[0] == "write" else tuple(words)


def shrink(found: Found, *, max_runs: int = 4000, seed: int = 0) -> Found:
    """The shortest run found for the rule it shows (a rule of the cluster's state when one can be reached: see the
    module's docstring), on the smallest cluster where it is no longer (a run of five nodes whose two elections need
    three votes each may fit in fewer steps on three); 1-minimal for that rule."""
    best = _shrink(for_its_rule(found, seed), max_runs)
    for size in range(FEWEST_NODES, best.config.nodes):
        for kept in combinations(node_names(best.config.nodes), size):
            smaller = _on_fewer_nodes(best, kept)
            if smaller is not None:
                smaller = _shrink(smaller, max_runs)
                if len(smaller.choices) <= len(best.choices):
                    return one_minimal(smaller)
    return one_minimal(best)


def for_its_rule(found: Found, seed: int = 0) -> Found:
    """The run with the rules that end it as its counterexample shows them: a rule of the cluster's state with those
    rules only; a call's rule moved toward one of the cluster's state when a short way there is found; a failure of
    the code, or rules asked by name, as it was."""
    config, check = found.config, found.violation.check
    if config.rules is not None or check in (STUDENT_FAULT, NODE_STOPPED):
        return found
    state = replace(config, rules=CLUSTER_RULES)
    if check in CLUSTER_RULES:
        done, violation, _ = run(state, found.choices)
        return Found(state, done, violation, found.search) if violation is not None and violation.check == check \
            else found
    shrunk = _shrink(found, 1000)  # (first: the steps to leave out are fewer, and it is what is shown otherwise)
    return toward_the_state(shrunk, seed) or shrunk


def toward_the_state(found: Found, seed: int = 0) -> Found | None:
    """A run that breaks a rule of the cluster's state near one that broke a call's rule: the run with one step left
    out, then two, then a short search with only the cluster's rules ending a run; None when none is found."""
    from lab.explore.search import search

    state = replace(found.config, rules=CLUSTER_RULES)
    choices = [_plain(w) for w in found.choices]
    tried = 0
    for leave in [(i,) for i in range(len(choices))] + list(combinations(range(len(choices)), 2)):
        if tried >= len(choices) + TOWARD_PAIRS:
            break
        tried += 1
        done, violation, _ = run(state, [w for i, w in enumerate(choices) if i not in leave])
        if violation is not None and violation.check in CLUSTER_RULES:
            return Found(state, done, violation, found.search)
    for size in sorted({FEWEST_NODES, found.config.nodes}):  # a smaller cluster first: its runs are shorter
        near, _ = search([replace(state, nodes=size)], budget=60.0, seed=seed, bfs_states=TOWARD_STATES,
                         max_walks=TOWARD_WALKS)
        if near is not None and near.violation.check in CLUSTER_RULES:
            return near
    return None


def one_minimal(found: Found) -> Found:
    """Leave out single steps while the rule stays broken, until none can go (ddmin stops at a count of runs). The
    run kept is always one that was played (its writes numbered as played), never words not replayed."""
    rule, best, current = found.violation.check, found, [_plain(w) for w in found.choices]
    changed = True
    while changed:
        changed = False
        for position in range(len(current)):
            done, violation, _ = run(found.config, current[:position] + current[position + 1:])
            if violation is not None and violation.check == rule:
                best, current, changed = Found(found.config, done, violation, found.search), \
                    [_plain(w) for w in done], True
                break
    return best


def nodes_of(words: tuple[str, ...]) -> list[str]:
    """The nodes a step names."""
    head = words[0]
    if head in ON_A_LINK:
        return words[1].replace("<->", "->").split("->") if len(words) > 1 else []
    if head in ("write", "read"):
        return [words[3]]
    return [words[1]]


def _renamed(words: tuple[str, ...], names: dict[str, str]) -> tuple[str, ...]:
    out, head = list(words), words[0]
    if head in ON_A_LINK:
        if len(words) > 1:
            arrow = "<->" if "<->" in words[1] else "->"
            out[1] = arrow.join(names[n] for n in words[1].split(arrow))
    elif head in ("write", "read"):
        out[3] = names[words[3]]
    else:
        out[1] = names[words[1]]
    return tuple(out)


def _on_fewer_nodes(found: Found, kept: tuple[str, ...]) -> Found | None:
    """The run's steps that name only the `kept` nodes, renamed A, B, C... on a cluster of that many; None when the
    rule does not break there."""
    names = dict(zip(kept, node_names(len(kept))))
    choices = [_renamed(w, names) for w in found.choices if all(n in names for n in nodes_of(w))]
    config = replace(found.config, nodes=len(kept))
    done, violation, _ = run(config, choices)
    if violation is None or violation.check != found.violation.check:
        return None
    return Found(config, done, violation, found.search)


def _shrink(found: Found, max_runs: int) -> Found:
    config, rule = found.config, found.violation.check
    runs, last = [0], [None]

    def still_broken(choices):
        runs[0] += 1
        done, violation, _ = run(config, choices)
        if violation is None or violation.check != rule:
            return None
        last[0] = (done, violation)
        return done, violation

    current = [_plain(w) for w in found.choices]
    first = still_broken(current)
    if first is None:  # cannot happen for a deterministic world; keep what was found
        return found
    current = [_plain(w) for w in first[0]]
    while True:
        smaller = _pairs(_ddmin(current, still_broken, runs, max_runs), still_broken, runs, max_runs)
        if len(smaller) == len(current) or runs[0] >= max_runs:
            current = smaller
            break
        current = smaller  # a pair went: single steps may go now too
    done, violation, _ = run(config, current)
    if violation is None or violation.check != rule:  # a function that answers otherwise each time (lab.explore.
        done, violation = last[0]  # twice names it): the last run that broke the rule is the counterexample
    return Found(config, done, violation, found.search)


def _ddmin(current, still_broken, runs, max_runs):
    """Remove chunks, halving their size down to single steps, while the rule still breaks."""
    parts = 2
    while len(current) >= 2 and runs[0] < max_runs:
        size = max(1, len(current) // parts)
        for start in range(0, len(current), size):
            candidate = current[:start] + current[start + size:]
            result = still_broken(candidate)
            if result is not None:
                current = [_plain(w) for w in result[0]]
                parts = max(parts - 1, 2)
                break
        else:
            if size == 1:
                break
            parts = min(len(current), parts * 2)
    return current


def _pairs(current, still_broken, runs, max_runs):
    """Steps that only go together (a cut and its heal, a kill and its restart): try removing any two at once."""
    changed = True
    while changed and runs[0] < max_runs:
        changed = False
        for i in range(len(current)):
            for j in range(i + 1, len(current)):
                if runs[0] >= max_runs:
                    return current
                result = still_broken(current[:i] + current[i + 1:j] + current[j + 1:])
                if result is not None:
                    current, changed = [_plain(w) for w in result[0]], True
                    break
            if changed:
                break
    return current
