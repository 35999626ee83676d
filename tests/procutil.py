"""Helpers for the real-process tests: bounded waits, and clusters whose processes are always cleaned up."""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import time
from typing import Callable, Iterator

from lab.processes.client import pid_alive
from lab.processes.supervisor import Supervisor

_PIDS: set[int] = set()  # every process a test started, killed at exit if still alive


def track(*pids: int) -> None:
    _PIDS.update(p for p in pids if p)


@atexit.register
def kill_tracked() -> None:
    kill_pids(list(_PIDS))


def kill_pids(pids) -> None:
    for pid in pids:
        if pid and pid_alive(pid):
            for signum in (signal.SIGCONT, signal.SIGKILL):
                try:
                    os.kill(pid, signum)
                except ProcessLookupError:
                    break


def wait_until(predicate: Callable[[], object], timeout: float, what: str = "", interval: float = 0.05):
    """Poll `predicate` until it returns something true; fail the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"waited {timeout:g}s for {what or predicate}; it did not happen")
        time.sleep(interval)


@contextlib.contextmanager
def running_cluster(run_dir, **options) -> Iterator[Supervisor]:
    """A supervisor and its nodes on ephemeral loopback ports; every process is gone afterwards, pass or fail."""
    supervisor = Supervisor(run_dir, cluster_file=False, **options)
    try:
        supervisor.start()
        track(*supervisor.pids())
        yield supervisor
    finally:
        track(*supervisor.pids())
        try:
            supervisor.stop()
        finally:
            supervisor.kill_leftovers()


def by_id(state: dict) -> dict[str, dict]:
    return {n["id"]: n for n in state["nodes"]}


def converged(state: dict) -> bool:
    """Every running node holds the leader's whole log, and all of it is committed."""
    leader = state.get("leader")
    if not leader:
        return False
    end = by_id(state)[leader]["log_end"]
    return all(n["log_end"] == end and n["hwm"] == end for n in state["nodes"] if n["state"] == "running")
