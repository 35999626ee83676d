"""The explorer in the dashboard: a counterexample (lab.explore.branch) shown on the replay's stage at one of its
steps, with the choices enabled there and each rule's status; taking a choice branches the run, saving writes it
as a script. The simulator and the student's functions run in a worker process (lab.explore.worker): a function
that never returns is stopped by the guard there, and a worker that does not answer is stopped, never this process."""

from __future__ import annotations

import os
import pickle
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lab.explore.worker import _LENGTH, MAX_FRAME, write_frame
from lab.i18n import say

ANSWER_SECONDS = 60.0  # the longest a worker may take to answer (each call of the student's has its own 1 s limit)


class Exploring:
    """A branch being explored in its worker, and the trace of its every step (written by the same replay as
    `hwm-lab simulate --script`), which the dashboard opens as its replay: the stage and narration are its own."""

    def __init__(self, path: str, at: int | None = None, *, answer_seconds: float = ANSWER_SECONDS):
        self.answer_seconds = answer_seconds
        self.work = Path(tempfile.mkdtemp(prefix="hwm-explore-"))
        self.trace: Path | None = None
        self.builds = 0
        self.saved: str | None = None
        self.view: dict = {}
        self.proc = subprocess.Popen([sys.executable, "-m", "lab.explore.worker"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE)
        try:
            self.ask("open", dir=path, at=at)
        except Exception:
            self.close()
            raise

    def ask(self, action: str, **args) -> dict:
        """One request to the worker; its answer (the panel's view kept), or ValueError with the worker's words."""
        if self.proc.poll() is not None:
            raise ValueError(say("the explorer's simulator stopped: open the counterexample again"))
        write_frame(self.proc.stdin.fileno(), (action, args))
        answer = self._read()
        if not answer["ok"]:
            raise ValueError(answer["error"])
        self.view = answer["view"]
        if answer.get("saved"):
            self.saved = answer["saved"]
        return answer

    def _read(self) -> dict:
        deadline, fd, data = time.monotonic() + self.answer_seconds, self.proc.stdout.fileno(), b""
        need = _LENGTH.size
        while len(data) < need:
            left = deadline - time.monotonic()
            ready = select.select([fd], [], [], max(0.0, left))[0] if left > 0 else []
            chunk = os.read(fd, need - len(data)) if ready else None
            if not chunk:
                self.stop()
                raise ValueError(say("the explorer's simulator did not answer within {seconds} s (a function that "
                                     "never returns?): it was stopped; open the counterexample again",
                                     seconds=round(self.answer_seconds)) if chunk is None else
                                 say("the explorer's simulator stopped: open the counterexample again"))
            data += chunk
            if len(data) == _LENGTH.size and need == _LENGTH.size:
                need += min(_LENGTH.unpack(data)[0], MAX_FRAME)
        return pickle.loads(data[_LENGTH.size:])

    def build(self) -> Path:
        """The trace of every step of the branch (the state shown is a position in it); the last one goes."""
        self.builds += 1
        trace = self.work / f"trace-{self.builds}"
        self.ask("trace", out=str(trace))
        if self.trace is not None:
            shutil.rmtree(self.trace, ignore_errors=True)
        self.trace = trace
        return trace

    def position(self, steps: list[dict]) -> int:
        """The replay's position just after step `at` (`steps`: the replay's steps, web.fold.Replay.steps)."""
        at = self.view["at"]
        if not steps:
            return 0
        return steps[at - 1]["n"] if at else steps[0]["start"] - 1

    def panel(self) -> dict:
        """What the page's panel shows: the worker's view, and where the branch was saved."""
        return {**self.view, "saved": self.saved}

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                write_frame(self.proc.stdin.fileno(), ("stop", {}))
                self.proc.wait(5)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.stop()
        for pipe in (self.proc.stdin, self.proc.stdout):
            pipe.close()
        shutil.rmtree(self.work, ignore_errors=True)
