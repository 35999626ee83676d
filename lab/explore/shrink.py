"""Shrink a failing run: delta debugging over its choices (Zeller's ddmin, as Hypothesis deletes choices) until
no single step, nor any two, can be removed with the same rule still broken; then the same run on a smaller
cluster, when it breaks the rule there too in no more steps."""

from __future__ import annotations

from dataclasses import replace
from itertools import combinations

from lab.core.config import node_names
from lab.explore.search import Found, run

FEWEST_NODES = 3  # the smallest cluster a counterexample is moved to
ON_A_LINK = ("deliver", "drop", "duplicate", "cut", "heal")  # steps whose second word is a link (A->B, A<->B)


def _plain(words: tuple[str, ...]) -> tuple[str, ...]:
    """A write without its payload: payloads are numbered again (v1, v2, ...) in the shrunk run."""
    return ("write", words[3]) if words[0] == "write" else tuple(words)


def shrink(found: Found, *, max_runs: int = 4000) -> Found:
    """The shortest run found, on the smallest cluster where it is no longer (a run of five nodes whose two
    elections need three votes each may fit in fewer steps on three)."""
    best = _shrink(found, max_runs)
    for size in range(FEWEST_NODES, best.config.nodes):
        for kept in combinations(node_names(best.config.nodes), size):
            smaller = _on_fewer_nodes(best, kept)
            if smaller is not None:
                smaller = _shrink(smaller, max_runs)
                if len(smaller.choices) <= len(best.choices):
                    return smaller
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
