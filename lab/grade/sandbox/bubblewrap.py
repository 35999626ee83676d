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

from lab.grade.sandbox import cgroups, privileges

# The statuses of a run, as the grader reports them per exercise.
OK, TIMEOUT, MEMORY, PROCESSES = "ok", "timeout", "memory", "processes"
CRASHED = "crashed"  # reported as "crashed: <why>"
REFUSED_CALL = (f"{CRASHED}: stopped by the sandbox for a system call no function of the lab needs (SIGSYS: mount, "
                f"ptrace, a new namespace, ...; docs/security.md)")
PRIVILEGED = f"{CRASHED}: the sandbox could not give up its privileges, so nothing of it ran (docs/security.md)"
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
    budget_factor: float = 3.0  # a submission's time for all its exercises together: this many times the
    budget_seconds: float = 30.0  # reference's (lab.grade.sandbox.proof), and at least this long

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
    out_of_time: bool = False  # stopped at the submission's budget (its wall clock for all its exercises)
    student_peak: int = 0  # the most memory the student's sandbox held at once, scratch included (bytes; 0: unknown)


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
               "lab/grade/__init__.py", "lab/grade/sandbox/__init__.py", "lab/grade/sandbox/wire.py",
               "lab/grade/sandbox/student_box.py", "lab/grade/sandbox/privileges.py")
ENV = ("--setenv", "LANG", "C.UTF-8", "--setenv", "PYTHONPATH", LAB, "--setenv", "PYTHONDONTWRITEBYTECODE", "1",
       "--setenv", "TMPDIR", "/tmp")
STUDENT, HARNESS = 0, 1  # a sandbox's role: each has a user of its own
UID_BASE = 1_900_000_000  # the sandboxes' users: UID_BASE + 2 x the executor's pid + role, no one else's


@dataclass(frozen=True)
class Box:
    """What a sandbox is besides its folders: its own unprivileged user (the same inside whoever runs the grader;
    under root, the same outside too), its writable scratch (RAM, sized), and how its memory is counted."""

    uid: int
    counted: str  # lab.grade.sandbox.cgroups: V2 or V1 (a control group counts it all), or TMPFS (sized within memory_mb)
    tmp_bytes: int
    shm_bytes: int

    @classmethod
    def of(cls, limits: "Limits", role: int, counted: str, pid: int | None = None) -> "Box":
        memory = limits.memory_mb * MiB
        if counted == cgroups.TMPFS:  # the scratch is part of memory_mb (the address space gets the rest)
            tmp, shm = memory // 4, memory // 16
        else:  # the group stops the sandbox at memory_mb, whatever holds it: the scratch may use it all
            tmp, shm = memory, memory
        return cls(UID_BASE + 2 * (os.getpid() if pid is None else pid) + role, counted, tmp, shm)

    def address_space(self, limits: "Limits") -> int:
        memory = limits.memory_mb * MiB
        return memory - self.tmp_bytes - self.shm_bytes if self.counted == cgroups.TMPFS else memory


MiB = 1024 * 1024


def _isolated(tool: str, box: Box, seccomp_fd: int) -> list[str]:
    """Namespaces of its own (no network, no other process), no environment, no capability, the seccomp filter, a
    session of its own, a private sized /tmp and /dev/shm; nothing of the machine until bound. Run by root,
    bubblewrap makes no user namespace (its users would be root's) and leaves the process only the right to
    become the box's user (lab.grade.sandbox.privileges, its first act); run by a user, it maps that user to the box's."""
    ident = str(box.uid)
    if os.geteuid() == 0:
        who = ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
               "--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        who = ["--unshare-all", "--unshare-user", "--uid", ident, "--gid", ident, "--disable-userns",
               "--cap-drop", "ALL"]
    return [tool, *who, "--die-with-parent", "--new-session", "--clearenv", *ENV,
            "--setenv", privileges.AS, f"{ident}:{ident}", "--seccomp", str(seccomp_fd), "--dev", "/dev",
            "--size", str(box.tmp_bytes), "--perms", "1777", "--tmpfs", "/tmp",
            "--size", str(box.shm_bytes), "--perms", "1777", "--tmpfs", "/dev/shm"]


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


def harness_command(tool: str | None, lab_root: str, box: str, fd: int, sandbox: Box | None = None,
                    seccomp_fd: int = -1) -> list[str]:
    """The harness's command: the lab and the reference at LAB, its folder at BOX (writable), the interpreter with
    its installed packages; nothing of the student's, no secret, no other submission."""
    argv = [sys.executable, "-B", "-m", "lab.grade.sandbox.harness_box", BOX if tool else box, str(fd)]
    if tool is None:
        return argv
    prefixes = dict.fromkeys(os.path.realpath(p) for p in (sys.prefix, sys.base_prefix))
    python, runtime = python_runtime()
    return [*_isolated(tool, sandbox, seccomp_fd), "--proc", "/proc", *_view([
        *runtime, *(a for p in prefixes for a in ("--ro-bind", p, p)),
        *(a for name in ("lab", "solutions") for a in ("--ro-bind-try", os.path.join(lab_root, name),
                                                       f"{LAB}/{name}")),
        "--bind", box, BOX]), *SEALED, "--chdir", BOX, *argv]


def student_lab(lab_root: str, folder: str) -> str:
    """A folder of the lab's files the student's process imports (STUDENT_LAB, copied from lab_root), and no other."""
    for rel in STUDENT_LAB:
        os.makedirs(os.path.dirname(os.path.join(folder, rel)), exist_ok=True)
        shutil.copyfile(os.path.join(lab_root, rel), os.path.join(folder, rel))
    return folder


def student_command(tool: str | None, lab_view: str, code: str, fd: int, sandbox: Box | None = None,
                    seccomp_fd: int = -1, module: str = "lab.grade.sandbox.student_box") -> list[str]:
    """The student's sandbox: the Python runtime, the lab's interface (lab_view, from student_lab) at LAB, the
    student's files at CODE (its working folder), read-only; nothing else. FD: its socket to the executor.
    (`module`: what runs there; the grader's escape probes run in the same sandbox, lab.grade.sandbox.escapes.)"""
    python, runtime = python_runtime()
    argv = [python, "-S", "-B", "-m", module, str(fd)]
    if tool is None:
        return argv
    return [*_isolated(tool, sandbox, seccomp_fd), *_view([*runtime, "--ro-bind", lab_view, LAB,
                                                            "--ro-bind", code, CODE]), *SEALED, "--chdir", CODE,
            *argv]


# Once everything is in place, the sandbox's own root and /dev (tmpfs that bubblewrap made, unsized) are made
# read-only: its /tmp and /dev/shm, sized, are the only places it may write (and the harness's BOX).
SEALED = ("--remount-ro", "/", "--remount-ro", "/dev")


DESTINATION = {"--ro-bind": 2, "--ro-bind-try": 2, "--bind": 2, "--symlink": 2, "--tmpfs": 1, "--dir": 1}


def _view(args: list[str]) -> list[str]:
    """Binds and links, after the folders on the way to them, made 0755: bubblewrap would make them 0700 for the
    user that sets the sandbox up, and under root that is not the box's user, who could then reach nothing."""
    destinations, i = [], 0
    while i < len(args):
        width = DESTINATION.get(args[i])
        if width is None:
            i += 2 if args[i] in ("--size", "--perms") else 1
            continue
        destinations.append(args[i + width])
        i += width + 1
    covered = set(destinations)
    parents: set[str] = set()
    for destination in destinations:
        parent = os.path.dirname(destination)
        while parent not in ("/", "") and parent not in covered and \
                not any(parent.startswith(c + "/") for c in covered):
            parents.add(parent)
            parent = os.path.dirname(parent)
    made = sorted(parents, key=lambda p: (p.count("/"), p))
    return [*(a for p in made for a in ("--perms", "0755", "--dir", p)), *args]


def _limit(limits: Limits, box: Box | None, group: "cgroups.Group | None") -> None:
    """In the forked child, before exec: its control group, and the limits bubblewrap and everything under it
    inherit. (Processes are counted by the group, where there is one, and watched by the executor.)"""
    if group is not None:
        group.join()
    resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 1))
    memory = box.address_space(limits) if box is not None else limits.memory_mb * MiB
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
          pass_fds: tuple[int, ...] = (), box: Box | None = None, group: "cgroups.Group | None" = None,
          stdout=subprocess.DEVNULL) -> subprocess.Popen:
    """Start argv under the limits, in a session of its own (so that its whole session can be watched and
    killed) and in its control group if it has one, its standard error into stderr_path."""
    with open(stderr_path, "wb") as stderr:
        return subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=stdout,
                                stderr=stderr, start_new_session=True, pass_fds=pass_fds,
                                preexec_fn=lambda: _limit(limits, box, group))


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


# Exit codes the child (lab.grade.sandbox.harness_box) uses for what it noticed itself.
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
    if code == -signal.SIGSYS:
        return REFUSED_CALL
    if code == privileges.EXIT_PRIVILEGED:
        return PRIVILEGED
    if code is not None and code < 0:
        return f"{CRASHED}: killed by {signal.Signals(-code).name}" if -code in signal.valid_signals() else \
            f"{CRASHED}: killed by signal {-code}"
    last = [line for line in stderr.strip().splitlines() if line.strip()]
    return f"{CRASHED}: {last[-1][:200] if last else f'exit code {code}'}"
