"""Replay a counterexample (a script with the header `network manual`) on the explorer's world: the same steps,
the student's calls in the trace, and the grader's rules after every step, so `hwm-lab simulate --script FILE`
ends on the very violation the search found."""

from __future__ import annotations

from pathlib import Path

from lab.core.messages import Answer
from lab.sim.world import SEGMENT_BYTES, World
from lab.harness.scenario import Run, SimDriver, Verdict, _fsync, write_verdict
from lab.harness.script import Scenario


class ManualDriver(SimDriver):
    """Time does not pass by itself: every change is a command of the script."""

    def write(self, payload, node=None, wait=True, timeout=5.0):
        self.cluster.apply(("write", payload, "to", node or self.cluster.leader() or self.names[0], "nowait"))
        return None

    def wait_for(self, predicate, timeout):
        return predicate(self.cluster.status())


def replay(scenario: Scenario, *, impl: str = "solutions", out: str | Path | None = None,
           truncation: str | None = None, nodes: int | None = None, meta: dict | None = None) -> Verdict:
    strategy = truncation or scenario.truncation
    world = World(nodes or scenario.nodes, truncation=strategy, impl=impl, fsync=_fsync(scenario), trace_dir=out,
                  segment_bytes=scenario.segment_bytes or SEGMENT_BYTES, record_calls=True,
                  meta={"run": f"{scenario.name}-{strategy}", "scenario": scenario.name, **(meta or {})})
    run = Run(scenario, ManualDriver(world))
    verdict = run.run_all()
    verdict.truncation = strategy
    world.close({"passed": verdict.passed})
    if out:
        write_verdict(out, verdict)
    verdict.world = world
    return verdict


__all__ = ["replay", "ManualDriver", "Answer"]
