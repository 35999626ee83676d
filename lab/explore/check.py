"""The short exploration that `hwm-lab exercise check N` runs after its scenarios: a few seconds, fixed seeds,
this exercise's functions from the student's code and the rest from the reference (in a handout, which has none, the
student's own code throughout)."""

from __future__ import annotations

import shutil
from pathlib import Path

from lab.i18n import Joined, node_list, say

BUDGET = 4.0  # seconds
SEED = 7
SIZES = (3, 4)  # an even size too: the article's n/2 is right for odd sizes only


def explore_check(number: int, impl: str, out_root: str | Path, *, budget: float = BUDGET) -> dict:
    """Search `impl` (already mixed with the reference) for exercise `number`; a plain dict for reports and JSON,
    with `text` (a catalogue Text) for the student's language."""
    from lab.explore.counterexample import explore

    out = Path(out_root) / f"ex{number}-explore"
    if out.exists():
        shutil.rmtree(out)
    strategy = "leader-epoch" if number == 6 else "generation"
    result = explore(impl, sizes=SIZES, truncation=strategy, budget=budget, seed=SEED, out=out, bfs_states=1500)
    f = result.figures
    if result.found is None:
        return {"found": False, "states": f.states, "seconds": round(f.seconds, 1), "text": say(
            "explore: no rule broken in {states} states ({seconds} s, nodes {sizes}, {strategy})",
            states=f.states, seconds=round(f.seconds, 1), sizes=node_list([str(n) for n in SIZES]),
            strategy=strategy)}
    v = result.found.violation
    values = dict(steps=len(result.found.choices), out=str(out), script=result.files[0])
    head = say("explore: a run of 1 step breaks a rule -> {out} (replay: hwm-lab simulate --script {script})",
               **values) if values["steps"] == 1 else \
        say("explore: a run of {steps} steps breaks a rule -> {out} (replay: hwm-lab simulate --script {script})",
            **values)
    return {"found": True, "rule": v.check, "detail": v.detail, "steps": len(result.found.choices),
            "out": str(out), "states": f.states, "seconds": round(f.seconds, 1), "function": result.culprit(),
            "text": Joined([head, result.explain()], "\n")}
