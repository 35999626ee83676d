"""The ScenarioDriver (lab.harness.scenario) for real processes: every step goes through the control API.

`RealDriver(...)` starts its own supervisor in a trace directory (or attaches to a running cluster with
`control_url=`); `run_real(name)` runs a teaching scenario on it and writes verdict.json, like
`lab.harness.scenario.simulate` does on the simulator.
"""

from __future__ import annotations

import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

from lab.core.config import node_names
from lab.core.guard import DEFAULT_LIMIT
from lab.core.messages import Answer
from lab.ports import codec
from lab.processes.client import ApiError, ClusterUnavailable, ControlClient
from lab.processes.supervisor import Supervisor
from lab.harness.scenario import Run, write_verdict
from lab.harness.script import load


class RealDriver:
    """Drives a cluster of node processes through the control API; its `cluster` is the control client.

    Staged time, as on the simulator: time passes only while the script waits. The nodes' clocks (election
    timeouts, heartbeats, write timeouts) are held between commands and run inside `wait_for` and inside a
    waiting `write`; everything that does not need a clock (client writes, replication, acknowledgements,
    campaigns, kills, cuts, fsync) happens for real at once. Without it a script's "cut B -> A right after A
    appends" races a heartbeat that arrives 50 ms later.
    """

    poll_seconds = 0.02
    grace_seconds = 0.2

    def __init__(self, nodes: int = 3, *, seed: int = 0, truncation: str = "generation",
                 fsync: str | dict[str, str] = "always", impl: str = "solutions",
                 trace_dir: str | Path | None = None, meta: dict | None = None, control_url: str | None = None,
                 token: str | None = None, writeback_ms: float = 0.0, **supervisor_options: Any):
        self.supervisor = None
        if control_url is None:
            # Writeback off by default: a `never` node loses exactly what was not flushed by an explicit step,
            # as the scripts expect, whatever the timing of the machine.
            trace_dir = trace_dir or tempfile.mkdtemp(prefix="hwm-real-")
            self.supervisor = Supervisor(trace_dir, nodes=nodes, seed=seed, truncation=truncation, fsync=fsync,
                                         impl=impl, meta=meta, writeback_ms=writeback_ms, hold_ticks=True,
                                         fresh=True, cluster_file=False, **supervisor_options).start()
            control_url, token = self.supervisor.control_url, self.supervisor.api_token
        self.trace_dir = Path(trace_dir) if trace_dir else None
        self.api = self.cluster = ControlClient(control_url, timeout=30.0, token=token)
        state = self.api.state(log=0)
        self.names = [n["id"] for n in state["nodes"]]
        self._held = bool(state["settings"].get("hold_ticks"))
        self._hold()
        self._stream: threading.Thread | None = None
        self._streaming = threading.Event()
        self.stream_acked = 0
        self.stream_failed = 0

    # ---- clocks ------------------------------------------------------------------------------------------

    def _hold(self) -> None:
        if not self._held:
            self.api.ticks(hold=True)
            self._held = True

    def _release(self) -> None:
        if self._held:
            self.api.ticks(hold=False)
            self._held = False

    # ---- the ScenarioDriver protocol -----------------------------------------------------------------------------

    def write(self, payload: str, node: str | None = None, wait: bool = True, timeout: float = 5.0) -> Answer | None:
        if not wait:
            self.api.write(payload, node, timeout=timeout, wait=False)
            return None
        self._release()  # an election may be needed before the write can commit
        try:
            answer = self.api.write(payload, node, timeout=timeout)
        finally:
            self._hold()
        return codec.answer_from_json(answer)

    def read(self, index: int, node: str, linearizable: bool = False) -> Answer:
        """A read through the supervisor (clocks held: a linearizable read's round needs messages only)."""
        answer = self.api.read(index, node, linearizable=linearizable)
        found = codec.answer_from_json(answer)
        if linearizable and answer.get("node") and found.leader is None:
            found = found._replace(leader=answer["node"])  # who answered, as the simulator's answer says
        return found

    def stream(self, on: bool) -> None:
        """A client writing continuously (s1, s2, ...), one write at a time, until stream(False)."""
        if on and self._stream is None:
            self._streaming.set()
            self._stream = threading.Thread(target=self._stream_writes, name="stream", daemon=True)
            self._stream.start()
        elif not on and self._stream is not None:
            self._streaming.clear()
            self._stream.join(15.0)
            self._stream = None

    def _stream_writes(self) -> None:
        count = 0
        while self._streaming.is_set():
            count += 1
            try:
                answer = self.api.write(f"s{count}", timeout=2.0)
            except (ApiError, ClusterUnavailable):
                answer = {"ok": False}
            if answer.get("ok"):
                self.stream_acked += 1
            else:
                self.stream_failed += 1
                time.sleep(0.02)

    def status(self) -> dict:
        return self.api.state(log="all")

    def wait_for(self, predicate: Callable[[dict], bool], timeout: float) -> bool:
        """Poll the status until the predicate holds (True) or `timeout` seconds pass (False).

        First a short grace with the clocks still held, for what needs no clock (a replication in flight); only
        then do the clocks run, until the predicate holds.
        """
        deadline = time.monotonic() + timeout
        if predicate(self.status()):
            return True
        grace = time.monotonic() + min(self.grace_seconds, timeout / 4)
        while time.monotonic() < grace:
            time.sleep(0.005)
            if predicate(self.status()):
                return True
        self._release()
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                time.sleep(min(self.poll_seconds, remaining))
                status = self.status()
                if predicate(status):
                    return True
                if any(n.get("fault") for n in status["nodes"]):  # the student's code stopped a node: no use
                    return False                                   # waiting; the scenario says so at once
        finally:
            self._hold()

    def events(self) -> list[dict]:
        return self.api.all_events()

    def note(self, kind: str, **fields: Any) -> None:
        self.api.note(kind, **fields)

    def close(self, extra_meta: dict | None = None) -> None:
        """Stop the stream, then stop the cluster if this driver started it (final snapshots, traces kept);
        a cluster it only attached to is left running, with its clocks running freely again."""
        self.stream(False)
        if self.supervisor is not None:
            self.supervisor.stop(extra_meta)
        else:
            try:
                self._release()
            except (ApiError, ClusterUnavailable):
                pass


def run_real(name: str, *, impl: str = "solutions", out: str | Path | None = None, seed: int = 0,
             truncation: str | None = None, nodes: int | None = None, meta: dict | None = None,
             limit: float = DEFAULT_LIMIT):
    """Run a teaching scenario as real processes; writes the trace directory and verdict.json to `out`."""
    script = load(name)
    strategy = truncation or script.truncation
    count = nodes or script.nodes
    out = Path(out) if out else Path(tempfile.mkdtemp(prefix=f"hwm-{script.name}-"))
    fsync = {n: script.fsync.get(n, "always") for n in node_names(count)}
    driver = RealDriver(count, seed=seed, truncation=strategy, fsync=fsync, impl=impl, trace_dir=out,
                        segment_bytes=script.segment_bytes, limit=limit,
                        meta={"run": f"{script.name}-{strategy}-real", "scenario": script.name,
                              "liveness_bound": script.liveness_bound, **(meta or {})})
    try:
        run = Run(replace(script, truncation=strategy), driver, seed=seed)
        verdict = run.run_all()
    except BaseException:
        driver.close({"passed": False})
        raise
    driver.close({"passed": verdict.passed})
    write_verdict(out, verdict)
    return verdict, out
