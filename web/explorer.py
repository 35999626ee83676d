"""The explorer in the dashboard: a counterexample (lab.explore.branch) shown on the replay's stage at one of its
steps, with the choices enabled there and each rule's status; taking a choice branches the run, saving writes it
as a script. The simulator runs here, on the server; the page only draws what it is sent."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from lab.explore.branch import Branch
from lab.harness.scenario import replay
from lab.harness.script import parse


class Exploring:
    """A branch being explored, and the trace of its every step (written by the same replay as `hwm-lab simulate
    --script`), which the dashboard opens as its replay: the stage and narration are the replay's own."""

    def __init__(self, branch: Branch):
        self.branch = branch
        self.work = Path(tempfile.mkdtemp(prefix="hwm-explore-"))
        self.trace: Path | None = None
        self.builds = 0
        self.saved: Path | None = None

    def build(self) -> Path:
        """The trace of every step of the branch (the state shown is a position in it); the last one goes."""
        self.builds += 1
        trace = self.work / f"trace-{self.builds}"
        shown = self.branch.at
        self.branch.at = len(self.branch.steps)
        try:
            text = self.branch.script()
        finally:
            self.branch.at = shown
        replay(parse(text, "branch"), impl=self.branch.impl, out=trace)
        if self.trace is not None:
            shutil.rmtree(self.trace, ignore_errors=True)
        self.trace = trace
        return trace

    def position(self, steps: list[dict]) -> int:
        """The replay's position just after step `at` (`steps`: the replay's steps, web.fold.Replay.steps)."""
        at = self.branch.at
        if not steps:
            return 0
        return steps[at - 1]["n"] if at else steps[0]["start"] - 1

    def view(self) -> dict:
        """What the page's panel shows: where it stands, the choices enabled there and each rule's status."""
        b = self.branch
        return {"at": b.at, "total": len(b.steps), "source": str(b.source) if b.source else None,
                "choices": [{"words": list(words), "label": label} for words, label in b.choices()],
                "rules": [rule.as_dict() for rule in b.rules()],
                "saved": str(self.saved) if self.saved else None}

    def close(self) -> None:
        shutil.rmtree(self.work, ignore_errors=True)
