"""Guided scenarios: the teaching scripts (lab/scenarios) run one narrated step at a time on a real cluster.

"Next" runs the next step's commands; "back" starts a fresh cluster and replays the steps before the previous
one, so the cluster is where it was one step earlier (a cluster cannot be rewound in place). The questions a room
may be asked before a step come from the scenario's model (web.questions), made when the scenario starts.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

from lab.i18n import Listed, say
from lab.i18n import scenarios as words
from lab.harness import script as scripts
from lab.harness.commands import ScenarioError
from lab.harness.scenario import Run
from lab.processes.client import ClusterUnavailable
from web.questions import Model, Question

GUIDED = ("s1", "k1", "k2", "f8", "n4", "d1", "r1")
GONE = say("The guided scenario's cluster is gone, so the guided run has ended: start the scenario again.")
REPLACED = say("A new cluster replaced the guided scenario's, so the guided run has ended: start the scenario again "
               "to go on with it.")


def catalog(names=GUIDED) -> list[dict]:
    """The guided scenarios as the pages list them: what each is about, never its steps (a step's narration tells
    the answer to the question the room is asked before it)."""
    out = []
    for name in names:
        try:
            s = scripts.load(name)
        except ScenarioError:
            continue
        out.append({"name": s.name, "title": words.title(s), "description": words.description(s), "nodes": s.nodes,
                    "truncation": s.truncation})
    return out


class Guide:
    """One guided scenario at a time. `launch(scenario)` starts a fresh cluster for it and returns a Driver."""

    def __init__(self, launch: Callable, on_change: Callable[[dict], None], spawn: Callable = None,
                 wait_seconds: float = 10.0, sleep: Callable = time.sleep, offload: Callable | None = None):
        self.launch = launch
        self.sleep = sleep  # the server's own (eventlet's, or time's)
        self.offload = offload or (lambda fn, *args: fn(*args))  # where the model's simulations run (app.OFFLOAD)
        self.wait_seconds = wait_seconds  # a step's `wait` may take this long (longer at the classroom pace)
        self.on_change = on_change
        self.spawn = spawn or (lambda fn, *a: threading.Thread(target=fn, args=a, daemon=True).start())
        self.lock = threading.Lock()
        self.scenario = None
        self.run = None
        self.driver = None
        self.busy = False
        self.error = None
        self.outcomes: list[dict] = []
        self.action = None  # what the busy guide is doing: ("start" | "next" | "back", the step it heads for)
        self.generation = 0  # bumps on start/stop so that a stale background step reports nothing
        self.model: Model | None = None  # the scenario on the simulator: the answers to the room's questions
        self.watched: dict | None = None  # the last step the stage played: its states before and after, its events

    def state(self) -> dict:
        s = self.scenario
        if s is None:
            return {"active": False, "busy": self.busy, "error": self.error}
        done = self.run.next_step if self.run else 0
        action, target = self.action if self.busy and self.action else (None, None)
        steps = words.steps(s)
        # (the next step's narration is never sent: it would tell the room the answer before the step plays)
        return {"active": True, "name": s.name, "title": words.title(s), "description": words.description(s),
                "truncation": s.truncation, "action": action, "target": target,
                "total": len(s.steps), "done": done, "busy": self.busy, "error": self.error,
                "text": steps[done - 1] if done else "",
                "outcomes": self.outcomes, "passed": self.run.verdict.passed if self.run else None,
                "asks": [{"n": n, "prompt": q.prompt} for n, q in enumerate(self.questions())]}

    def questions(self) -> list[Question]:
        """The questions the room may be asked before the next step (none while a step runs)."""
        model, run = self.model, self.run
        if self.busy or model is None or run is None or model.scenario != self.scenario:
            return []
        return model.questions(run.next_step) if run.next_step < len(self.scenario.steps) else []

    def finished(self) -> bool:
        return self.run is not None and not self.busy and self.run.next_step >= len(self.scenario.steps)

    def _publish(self) -> None:
        self.on_change(self.state())

    def start(self, name: str, truncation: str | None = None) -> dict:
        if name.lower() not in GUIDED:
            raise ValueError(say("no guided scenario {name}; choose one of {names}", name=repr(name),
                                 names=Listed(name.upper() for name in GUIDED)))
        scenario = scripts.load(name)
        if truncation:
            from dataclasses import replace
            scenario = replace(scenario, truncation=truncation)
        with self.lock:
            if self.busy:
                raise RuntimeError(say("a step is still running; wait for it to finish"))
            self.busy, self.error, self.outcomes = True, None, []
            self.generation += 1
            self.scenario, self.run, self.action = scenario, None, ("start", 0)
        self._publish()
        self.spawn(self._rebuild, self.generation, 0)
        return self.state()

    def next(self) -> dict:
        with self.lock:
            if self.scenario is None or self.run is None:
                raise RuntimeError(say("start a scenario first"))
            if self.busy:
                raise RuntimeError(say("a step is still running; wait for it to finish"))
            if self.run.next_step >= len(self.scenario.steps):
                raise RuntimeError(say("that was the last step; press back, or start the scenario again"))
            self.busy, self.error = True, None
            self.action = ("next", self.run.next_step + 1)
        self._publish()
        self.spawn(self._step, self.generation)
        return self.state()

    def back(self) -> dict:
        with self.lock:
            if self.scenario is None or self.run is None:
                raise RuntimeError(say("start a scenario first"))
            if self.busy:
                raise RuntimeError(say("a step is still running; wait for it to finish"))
            target = max(0, self.run.next_step - 1)
            self.busy, self.error, self.outcomes = True, None, []
            self.generation += 1
            self.action = ("back", target)
        self._publish()
        self.spawn(self._rebuild, self.generation, target)
        return self.state()

    def stop(self) -> dict:
        with self.lock:
            self.generation += 1
            self.scenario, self.run, self.busy, self.error, self.outcomes = None, None, False, None, []
        self._publish()
        return self.state()

    def _look(self, seen: int | None = None):
        """The cluster as the stage shows it now, and its events: (status, how many) before a step, (status, the
        step's events) after it."""
        status = self.driver.status()
        events = self.driver.events() if hasattr(self.driver, "events") else []
        return (status, len(events)) if seen is None else (status, list(events[seen:]))

    def cluster_replaced(self) -> None:
        """A cluster was started that is not this guide's: the guided run is over, and the Guide tab says why."""
        with self.lock:
            if self.scenario is None:
                return
            self.generation += 1
            self._end(REPLACED)
        self._publish()

    def _end(self, why) -> None:
        """(under the lock) No guided run any more; `why` is what the pages say instead, in their language."""
        self.scenario, self.run, self.driver, self.busy, self.outcomes = None, None, None, False, []
        self.error = why

    # ---- background work ----------------------------------------------------------------------------------

    def _rebuild(self, generation: int, steps: int) -> None:
        """A fresh cluster for the scenario, then its first `steps` steps run quickly (for back)."""
        try:
            driver = self.launch(self.scenario)
            run = Run(self.scenario, driver, wait_timeout=self.wait_seconds)
            for _ in range(steps):
                outcomes = run.run_step()
                if run.verdict.aborted:
                    break
            with self.lock:
                if generation != self.generation:
                    return
                self.driver, self.run = driver, run
                self.outcomes = [o.__dict__ for o in outcomes] if steps else []
                self.error = run.verdict.aborted or None
        except Exception as exc:  # shown in the page: the cluster could not start, a wait timed out, ...
            with self.lock:
                if generation == self.generation:
                    self.error = f"{type(exc).__name__}: {exc}"
        finally:
            with self.lock:
                if generation == self.generation:
                    self.busy = False
        if generation == self.generation:
            self._publish()
        self._model(generation)

    def _model(self, generation: int) -> None:
        """The scenario's model, once the cluster is up (the room waits for no simulation): then its questions."""
        scenario = self.scenario
        if scenario is None or (self.model is not None and self.model.scenario == scenario):
            return
        self.sleep(0.2)  # the pages hear that the cluster is ready before the simulator takes the processor
        model = self.offload(Model, scenario)
        with self.lock:
            if generation != self.generation:
                return
            self.model = model
        self._publish()

    def _step(self, generation: int) -> None:
        try:
            before, seen = self._look()
            outcomes = self.run.run_step()
            after, events = self._look(seen)
            with self.lock:
                if generation == self.generation:  # what the room watched, for the reveal's "why"
                    self.watched = {"step": self.run.next_step, "before": before, "after": after, "events": events}
            with self.lock:
                if generation == self.generation:
                    self.outcomes = [o.__dict__ for o in outcomes]
                    self.error = self.run.verdict.aborted or None
        except ClusterUnavailable:  # its cluster is gone (stopped, or replaced by hand): the guide ends, says so
            with self.lock:
                if generation == self.generation:
                    self._end(GONE)
        except Exception as exc:
            with self.lock:
                if generation == self.generation:
                    self.error = f"{type(exc).__name__}: {exc}"
        finally:
            with self.lock:
                if generation == self.generation:
                    self.busy = False
        if generation == self.generation:
            self._publish()
