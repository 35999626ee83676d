"""Search, shrink, and write what was found: `counterexample.txt` (a script of the lab's scenario language that
`hwm-lab simulate --script` replays to the same violation), its trace directory, and the explanation."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from lab.core.events import STEP
from lab.core.impl import student_functions
from lab.core.monitor import Violation
from lab.explore.explain import explanation, is_state_rule, narrate, title, wrong_call
from lab.explore.search import BFS_MEMORY, Config, Figures, Found, search
from lab.explore.shrink import shrink
from lab.i18n import Joined, Text

SCRIPT = "counterexample.txt"
TRACE = "trace"


@dataclass
class Story:
    """The run as shown, step by step: the cluster's status before the first step and after each (`states[k]`: after
    step k), and each step's trace events (`events[k - 1]`: step k's). What an explanation says of a node is read
    here."""

    states: list[dict] = field(default_factory=list)
    events: list[list[dict]] = field(default_factory=list)


@dataclass
class Result:
    found: Found | None
    figures: Figures
    steps: list[Text]
    calls: list[dict]
    files: list[str]
    story: Story | None = None

    @property
    def violation(self) -> Violation | None:
        return self.found.violation if self.found else None

    def explain(self) -> Joined | None:
        if not self.found:
            return None
        return explanation(self.found.violation, self.steps, self.calls,
                           students=bool(student_functions(self.found.config.impl)), story=self.story,
                           truncation=self.found.config.truncation)

    def culprit(self) -> str | None:
        """The student's function the run blames: the one that failed, or whose call broke its rule (a call handed
        a wrong answer blames the function that gave it), or the call the explanation shows; None when none did."""
        if not self.found:
            return None
        facts = dict(self.found.violation.facts)
        if "fault" in facts:
            return facts["fault"].function
        if "call" in facts:
            return (facts["call"].used or facts["call"]).function
        call = wrong_call(self.found.violation, self.calls, len(self.found.choices))
        return call["function"] if call else None

    def as_dict(self) -> dict:
        figures = self.figures.as_dict()
        if not self.found:
            return {"violation": None, "figures": figures}
        v, config = self.found.violation, self.found.config
        return {"violation": {**v.as_dict(), "title": str(title(v)), "rule": v.check,
                              "kind": "state" if is_state_rule(v.check) else "call",
                              "steps": len(self.found.choices),
                              "nodes": config.nodes, "truncation": config.truncation, "search": self.found.search,
                              "files": self.files, "explanation": str(self.explain())}, "figures": figures}


def tell(found: Found) -> tuple[list[Text], list[dict], Story]:
    """Replay the run once more, with the student's calls recorded: each step in words, the calls, and the run's
    states step by step."""
    world = found.config.world(fast=False, record_calls=True)
    steps, story = [], Story([world.status()], [])
    for words in found.choices:
        seen = len(world.events)
        if world.apply(tuple(words)) is not None:
            steps.append(narrate(tuple(words), world))
            found.config.broken(world)
            story.states.append(world.status())
            story.events.append(list(world.events[seen:]))
    return steps, world.calls, story


def script(found: Found, steps: list[Text], *, seed: int, impl: str) -> str:
    """The script that replays the run: its settings, the rule it breaks and its choices, one bare step each; it
    holds no sentence, so whoever shows it says its title and steps in the reader's language (lab.i18n.steps)."""
    config = found.config
    lines = [f"# hwm-lab explore --seed {seed} ({found.search}): hwm-lab simulate --script {SCRIPT}",
             f"counterexample {found.violation.check}", f"nodes {config.nodes}", f"truncation {config.truncation}",
             "network manual", "sync manual",
             f"segment-bytes {config.segment_bytes}", f"impl {impl}"]
    if config.rules:
        lines.append(f"rules {','.join(sorted(config.rules))}")
    lines.append("")
    lines += step_lines(found.choices)
    return "\n".join(lines) + "\n"


def step_lines(choices) -> list[str]:
    """Each choice as a bare step of a script: its words are made from the choice when the step is shown."""
    lines = []
    for words in choices:
        lines += [STEP, f"  {' '.join(words)}"]
    return lines


def explore(impl: str, *, sizes=(3,), truncation: str = "generation", budget: float = 30.0, seed: int = 0,
            out: str | Path | None = None, limit: float = 1.0, progress: Callable[[Figures], None] | None = None,
            shown_impl: str | None = None, bfs_states: int | None = None, bfs_memory: int = BFS_MEMORY, rules=None,
            max_walks: int | None = None, jobs: int = 1, lang: str | None = None) -> Result:
    """Search `impl` on each cluster size; shrink what is found; with `out`, write the script and its trace.
    `rules`: only these checks end the search (e.g. acked-in-final-logs, to see a write lost, not only put at risk).
    (`lang` is kept for callers: the script and its trace hold no sentence, in any language.)"""
    configs = [Config(n, truncation, impl, limit, frozenset(rules) if rules else None) for n in sizes]
    found, figures = search(configs, budget=budget, seed=seed, progress=progress, bfs_states=bfs_states,
                            bfs_memory=bfs_memory, max_walks=max_walks, jobs=jobs)
    if found is None:
        return Result(None, figures, [], [], [])
    found = shrink(found, seed=seed)
    steps, calls, story = tell(found)
    files = []
    if out is not None:
        from lab.harness.scenario import simulate

        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        path = out / SCRIPT
        path.write_text(script(found, steps, seed=seed, impl=shown_impl or impl), encoding="utf-8")
        simulate(str(path), impl=impl, out=out / TRACE)
        files = [str(path), str(out / TRACE)]
    return Result(found, figures, steps, calls, files, story)
