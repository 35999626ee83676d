"""A child process for a student's code: bubblewrap where installed (its own network and process namespaces, a
read-only view of the machine but for its own folder and a private /tmp), rlimits always, a wall clock, and a
watch on its number of processes. Its output is a folder of files, read back as data by the caller."""

from __future__ import annotations

import os
import sys
import resource
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, fields
from pathlib import Path

# The statuses of a run, as the grader reports them per exercise.
OK, TIMEOUT, MEMORY, PROCESSES = "ok", "timeout", "memory", "processes"
CRASHED = "crashed"  # reported as "crashed: <why>"
WATCH_SECONDS = 0.05  # how often the parent looks at the child's clock and processes


@dataclass(frozen=True)
class Limits:
    """What one sandboxed child may use (the rubric's [sandbox] table may change them)."""

    cpu_seconds: int = 60  # RLIMIT_CPU
    memory_mb: int = 1024  # RLIMIT_AS: address space
    file_mb: int = 64  # RLIMIT_FSIZE: the largest file it may write
    processes: int = 32  # RLIMIT_NPROC in the child, and the parent's watch on its session
    wall_seconds: float = 120.0  # killed after this long, whatever it does
    call_seconds: float = 1.0  # one call of a student's function (lab.core.guard)

    @classmethod
    def from_table(cls, table: dict, where: str = "sandbox") -> "Limits":
        known = {f.name: f.type for f in fields(cls)}
        values = {}
        for key, value in table.items():
            if key not in known:
                raise ValueError(f"{where}.{key} is not a limit; the limits are {sorted(known)}")
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ValueError(f"{where}.{key} must be a number > 0")
            values[key] = value
        return cls(**values)


class NoSandbox(Exception):
    """No sandbox tool works on this machine, and the instructor did not allow running without one."""


@dataclass
class Outcome:
    status: str  # OK, TIMEOUT, MEMORY, PROCESSES or "crashed: ..."
    returncode: int | None
    wall_seconds: float
    stderr: str  # its last lines, for the instructor


def bwrap() -> str | None:
    """The bubblewrap binary, if installed and able to make its namespaces here."""
    path = shutil.which("bwrap")
    if path is None:
        return None
    try:
        probe = subprocess.run([path, "--unshare-net", "--unshare-pid", "--die-with-parent", "--ro-bind", "/", "/",
                                "--dev", "/dev", "--proc", "/proc", "true"], capture_output=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return path if probe.returncode == 0 else None


def command(argv: list[str], workdir: str, tool: str | None) -> list[str]:
    """The child's command line: under bubblewrap when there is one (no network, nothing writable but workdir and
    a private /tmp, its own process tree that dies with the parent), else as it is (rlimits only)."""
    if tool is None:
        return argv
    return [tool, "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent",
            "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
            *(a for path in kept_under_tmp(argv[0]) for a in ("--ro-bind", path, path)),
            "--bind", workdir, workdir, "--chdir", workdir, *argv]


def kept_under_tmp(python: str) -> list[str]:
    """What the child needs that lives under /tmp, which the sandbox's private /tmp would hide: the Python and
    its environment (a checkout cloned under /tmp, as CI's may be), the lab, and the import path (Spark ships the
    lab's zip into a folder of its own under /tmp). Bound back read-only, each once, outermost first."""
    wanted = [python, sys.prefix, sys.base_prefix, str(Path(__file__).resolve().parents[2]),
              *os.environ.get("PYTHONPATH", "").split(os.pathsep), *sys.path]
    found: list[str] = []
    for path in sorted({os.path.realpath(p) for p in wanted if p} | {os.path.abspath(p) for p in wanted if p}):
        if (path == "/tmp" or path.startswith("/tmp/")) and os.path.exists(path):
            if not any(path == f or path.startswith(f + "/") for f in found):
                found.append(path)
    return [p for p in found if p != "/tmp"]


def _limit(limits: Limits) -> None:
    """In the forked child, before exec: the limits bubblewrap and everything under it inherit. (The number of
    processes is limited by the child itself once inside, where its user namespace counts them.)"""
    resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 1))
    memory = limits.memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    size = limits.file_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _session(sid: int, cap: int) -> list[int]:
    """The processes of a session (as /proc shows them: the child's, whatever process groups it makes), up to
    cap + 1 of them."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        after = stat[stat.rfind(b")") + 2:].split()
        if len(after) > 3 and int(after[3]) == sid:
            found.append(int(name))
            if len(found) > cap:
                break
    return found


def run(argv: list[str], workdir: str, limits: Limits, tool: str | None, env: dict[str, str]) -> Outcome:
    """Run argv in workdir under the limits; kill its whole session when it is over."""
    started = time.monotonic()
    stderr_path = os.path.join(workdir, "stderr.txt")
    with open(stderr_path, "wb") as stderr:
        child = subprocess.Popen(command(argv, workdir, tool), cwd=workdir, env=env, stdin=subprocess.DEVNULL,
                                 stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True,
                                 preexec_fn=lambda: _limit(limits))
    status = None
    try:
        while child.poll() is None:
            if time.monotonic() - started > limits.wall_seconds:
                status = TIMEOUT
                break
            if len(_session(child.pid, limits.processes + 3)) > limits.processes + 3:  # bwrap's two, the lab's own
                status = PROCESSES
                break
            time.sleep(WATCH_SECONDS)
    finally:
        _kill_group(child)
    wall = time.monotonic() - started
    with open(stderr_path, "rb") as f:
        tail = f.read()[-4000:].decode("utf-8", errors="replace")
    code = child.returncode
    if status is None:
        status = classify(code, tail)
    return Outcome(status, code, wall, tail)


def _kill_group(child: subprocess.Popen) -> None:
    """Kill the child's whole session: its process group and any group it made (without bubblewrap's process
    namespace nothing else would end them)."""
    for _ in range(3):
        pids = _session(child.pid, 100_000)
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
    try:
        child.wait(timeout=10)
    except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL'd children end
        pass


# Exit codes the child (lab.grade.rerun) uses for what it noticed itself.
EXIT_MEMORY, EXIT_PROCESSES = 70, 71


def classify(code: int | None, stderr: str) -> str:
    """A finished child's status from how it ended."""
    if code == 0:
        return OK
    if code in (-signal.SIGXCPU, -signal.SIGKILL) and "MemoryError" not in stderr:
        return TIMEOUT  # the CPU limit: SIGXCPU first, SIGKILL at the hard limit
    if code == EXIT_MEMORY or "MemoryError" in stderr:
        return MEMORY
    if code == EXIT_PROCESSES:
        return PROCESSES
    if code is not None and code < 0:
        return f"{CRASHED}: killed by {signal.Signals(-code).name}" if -code in signal.valid_signals() else \
            f"{CRASHED}: killed by signal {-code}"
    last = [line for line in stderr.strip().splitlines() if line.strip()]
    return f"{CRASHED}: {last[-1][:200] if last else f'exit code {code}'}"
