"""The grader's two sandboxes (bubblewrap: no network, and only the folders each is given), the harness's and the
student's, with rlimits always and a watch on their processes (docs/security.md)."""

from __future__ import annotations

import functools
import glob
import os
import resource
import shutil
import signal
import subprocess
import sys
import sysconfig
from dataclasses import dataclass, fields

# The statuses of a run, as the grader reports them per exercise.
OK, TIMEOUT, MEMORY, PROCESSES = "ok", "timeout", "memory", "processes"
CRASHED = "crashed"  # reported as "crashed: <why>"
WATCH_SECONDS = 0.05  # how often the parent looks at the child's clock and processes
FOLDER_PREFIX = "hwm-lab-sandbox-"  # an executor's folder for one submission, in its TMPDIR: <prefix><grade>-...


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


LAB = "/hwm"  # where a sandbox finds the lab's files (its import path)
BOX = "/box"  # the harness's own folder, the only one it may write to
CODE = "/code"  # the student's files (code/exercises/*.py), read-only; the student's working folder
# The lab's files the student's process imports: the interface its stubs import, the guard, and its side of the wire.
STUDENT_LAB = ("lab/__init__.py", "lab/core/__init__.py", "lab/core/interface.py", "lab/core/messages.py",
               "lab/core/events.py", "lab/core/reasons.py", "lab/core/guard.py", "lab/core/impl.py",
               "lab/grade/__init__.py", "lab/grade/wire.py", "lab/grade/serve.py")
ENV = ("--setenv", "LANG", "C.UTF-8", "--setenv", "PYTHONPATH", LAB, "--setenv", "PYTHONDONTWRITEBYTECODE", "1",
       "--setenv", "TMPDIR", "/tmp")


def _isolated(tool: str) -> list[str]:
    """Namespaces of its own (no network, no other process), no environment, an empty private /tmp, ended with
    the task (started in a session of its own, with no terminal); nothing of the machine until bound."""
    return [tool, "--unshare-all", "--die-with-parent", "--clearenv", *ENV, "--dev", "/dev",
            "--tmpfs", "/tmp"]


@functools.lru_cache(maxsize=None)
def python_runtime() -> tuple[str, tuple[str, ...]]:
    """The interpreter (its real path) and the bubblewrap arguments that show it its runtime, read-only: the
    interpreter, the standard library (its site-packages hidden), the shared libraries they load, and the links
    on the way to them. No site-packages: the student's process runs `python -S`."""
    python = os.path.realpath(sys.executable)
    stdlib = os.path.realpath(sysconfig.get_paths()["stdlib"])
    dynload = os.path.realpath(sysconfig.get_config_var("DESTSHARED") or os.path.join(stdlib, "lib-dynload"))
    objects = [python, *sorted(glob.glob(os.path.join(dynload, "*.so")))]
    links: dict[str, str] = {}
    files = {_resolved(path, links) for path in _shared_libraries(objects)}
    args = [a for link, target in sorted(links.items(), key=lambda kv: kv[0].count("/"))
            for a in ("--symlink", target, link)]
    args += ["--ro-bind", stdlib, stdlib]
    if not dynload.startswith(stdlib + "/"):
        args += ["--ro-bind", dynload, dynload]
    for hidden in ("site-packages", "dist-packages"):
        if os.path.isdir(os.path.join(stdlib, hidden)):
            args += ["--tmpfs", os.path.join(stdlib, hidden)]
    for path in sorted(files | {python}):
        if not path.startswith((stdlib + "/", dynload + "/")):
            args += ["--ro-bind", path, path]
    return python, tuple(args)


def _shared_libraries(objects: list[str]) -> set[str]:
    """The shared libraries these programs and modules load, as the dynamic loader finds them (ldd)."""
    found: set[str] = set()
    try:
        listing = subprocess.run(["ldd", *objects], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return found
    for line in listing.splitlines():
        words = line.split()
        path = words[2] if len(words) > 2 and words[1] == "=>" else words[0] if words else ""
        if path.startswith("/") and os.path.exists(path):
            found.add(path)
    return found


def _resolved(path: str, links: dict[str, str], depth: int = 0) -> str:
    """`path` with every link on its way followed; each link met is noted (the sandbox makes the same link)."""
    parts = path.strip("/").split("/")
    current = "/"
    for n, part in enumerate(parts):
        step = os.path.join(current, part)
        if os.path.islink(step) and depth < 40:
            target = os.readlink(step)
            links[step] = target
            rest = os.path.join(os.path.normpath(os.path.join(current, target)), *parts[n + 1:])
            return _resolved(rest, links, depth + 1)
        current = step
    return current


def harness_command(tool: str | None, lab_root: str, box: str, fd: int) -> list[str]:
    """The harness's command: the lab and the reference at LAB, its folder at BOX (writable), the interpreter with
    its installed packages; nothing of the student's, no secret, no other submission."""
    argv = [sys.executable, "-B", "-m", "lab.grade.rerun", BOX if tool else box, str(fd)]
    if tool is None:
        return argv
    prefixes = dict.fromkeys(os.path.realpath(p) for p in (sys.prefix, sys.base_prefix))
    python, runtime = python_runtime()
    return [*_isolated(tool), "--proc", "/proc", *runtime,
            *(a for p in prefixes for a in ("--ro-bind", p, p)),
            *(a for name in ("lab", "solutions") for a in ("--ro-bind-try", os.path.join(lab_root, name),
                                                           f"{LAB}/{name}")),
            "--bind", box, BOX, "--chdir", BOX, *argv]


def student_lab(lab_root: str, folder: str) -> str:
    """A folder of the lab's files the student's process imports (STUDENT_LAB, copied from lab_root), and no other."""
    for rel in STUDENT_LAB:
        os.makedirs(os.path.dirname(os.path.join(folder, rel)), exist_ok=True)
        shutil.copyfile(os.path.join(lab_root, rel), os.path.join(folder, rel))
    return folder


def student_command(tool: str | None, lab_view: str, code: str, fd: int) -> list[str]:
    """The student's sandbox: the Python runtime, the lab's interface (lab_view, from student_lab) at LAB, the
    student's files at CODE (its working folder), read-only; nothing else. FD: its socket to the executor."""
    python, runtime = python_runtime()
    argv = [python, "-S", "-B", "-m", "lab.grade.serve", str(fd)]
    if tool is None:
        return argv
    return [*_isolated(tool), *runtime, "--ro-bind", lab_view, LAB, "--ro-bind", code, CODE, "--chdir", CODE,
            *argv]


def _limit(limits: Limits) -> None:
    """In the forked child, before exec: the limits bubblewrap and everything under it inherit. (The number of
    processes is limited by the child itself once inside, where its user namespace counts them.)"""
    resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 1))
    memory = limits.memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    size = limits.file_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _sessions(sids: set[int], cap: int) -> dict[int, list[int]]:
    """The processes of these sessions (as /proc shows them: a sandbox's, whatever process groups it makes), up to
    cap + 1 of each, in one look at /proc."""
    found: dict[int, list[int]] = {sid: [] for sid in sids}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        after = stat[stat.rfind(b")") + 2:].split()
        if len(after) > 3 and int(after[3]) in found and len(found[int(after[3])]) <= cap:
            found[int(after[3])].append(int(name))
    return found


def start(argv: list[str], cwd: str, limits: Limits, stderr_path: str, env: dict[str, str],
          pass_fds: tuple[int, ...] = ()) -> subprocess.Popen:
    """Start argv under the limits, in a session of its own (so that its whole session can be watched and
    killed), its standard error into stderr_path."""
    with open(stderr_path, "wb") as stderr:
        return subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=stderr, start_new_session=True, pass_fds=pass_fds,
                                preexec_fn=lambda: _limit(limits))


def too_many(children: list[subprocess.Popen], processes: int) -> list[subprocess.Popen]:
    """The children that, with what they started, are more than `processes` processes (besides bubblewrap's two
    and the lab's own). Counted down each child's tree, which a sandbox's own process namespace keeps whole (a few
    files to read, where a look at a session reads every process of the machine): the session where the kernel does
    not list children, or where no namespace keeps the tree (an orphan leaves it)."""
    cap = processes + 3
    counted = {c.pid: _tree(c.pid, cap) for c in children}
    missing = {pid for pid, found in counted.items() if found is None}
    if missing:
        counted.update(_sessions(missing, cap))
    return [c for c in children if len(counted[c.pid]) > cap]


def _tree(pid: int, cap: int) -> list[int] | None:
    """pid and its descendants, up to cap + 1 of them, from /proc/PID/task/*/children; None if not listed."""
    found, todo = [], [pid]
    while todo and len(found) <= cap:
        current = todo.pop()
        found.append(current)
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{current}/task/{task}/children", "rb") as f:
                    todo.extend(int(x) for x in f.read().split())
            except FileNotFoundError:
                if current == pid and not os.path.exists(f"/proc/{current}/task/{task}/stat"):
                    continue  # the thread ended meanwhile
                return None if current == pid else found
            except OSError:
                continue
    return found


def tail(path: str) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - 4000))
            return f.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def kill(child: subprocess.Popen) -> None:
    """Kill the child's whole session: its process group and any group it made (without bubblewrap's process
    namespace nothing else would end them)."""
    for _ in range(3):
        pids = _sessions({child.pid}, 100_000)[child.pid]
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
