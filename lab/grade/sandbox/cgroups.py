"""A sandbox's memory and processes counted by the kernel: a control group of its own where the grading machine lets
the grader make one (cgroup v2's memory.max and pids.max, or v1's memory.limit_in_bytes and pids.max), so that
what a student writes into its /tmp or /dev/shm (RAM) counts against its memory limit like any allocation
(docs/security.md). Elsewhere the sandbox's writable places are sized tmpfs within its memory limit instead
(lab/grade/sandbox/bubblewrap.py): `mechanism()` says which, and the grade says it too."""

from __future__ import annotations

import os
import time

V2, V1, TMPFS = "cgroup v2", "cgroup v1", "sized tmpfs"
PREFIX = "hwm-lab-"  # a sandbox's group: <prefix><grade>-<pid>-<role>


def _mounts() -> dict[str, str]:
    """Where each controller's hierarchy is mounted: {"v2": path, "memory": path, "pids": path}."""
    found: dict[str, str] = {}
    try:
        with open("/proc/self/mountinfo", encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return found
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, rest = left.split(), right.split()
        if len(fields) < 5 or len(rest) < 3:
            continue
        point = fields[4].replace("\\040", " ")
        if rest[0] == "cgroup2":
            found.setdefault("v2", point)
        elif rest[0] == "cgroup":
            for option in rest[2].split(","):
                if option in ("memory", "pids"):
                    found.setdefault(option, point)
    return found


def _own_groups() -> dict[str, str]:
    """This process's group in each hierarchy, from /proc/self/cgroup: {"v2": path, "memory": path, ...}."""
    groups: dict[str, str] = {}
    try:
        with open("/proc/self/cgroup", encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return groups
    for line in lines:
        number, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if number == "0" and controllers == "":
            groups["v2"] = path
        for name in controllers.split(","):
            if name in ("memory", "pids"):
                groups[name] = path
    return groups


def _writable(folder: str) -> bool:
    return os.path.isdir(folder) and os.access(folder, os.W_OK | os.X_OK)


def _v2_parent(mounts: dict[str, str], groups: dict[str, str]) -> str | None:
    """A v2 group under which this process may make groups with memory and pids controllers (delegated to it)."""
    if "v2" not in mounts or "v2" not in groups:
        return None
    parent = os.path.join(mounts["v2"], groups["v2"].lstrip("/"))
    try:
        with open(os.path.join(parent, "cgroup.subtree_control"), encoding="utf-8") as f:
            enabled = f.read().split()
    except OSError:
        return None
    return parent if {"memory", "pids"} <= set(enabled) and _writable(parent) else None


def _v1_parents(mounts: dict[str, str], groups: dict[str, str]) -> dict[str, str] | None:
    """The v1 memory (and, if there, pids) groups under which this process may make groups."""
    parents = {}
    for controller in ("memory", "pids"):
        if controller in mounts and controller in groups:
            parent = os.path.join(mounts[controller], groups[controller].lstrip("/"))
            if _writable(parent):
                parents[controller] = parent
    return parents if "memory" in parents else None


def mechanism() -> str:
    """How a sandbox's memory is counted on this machine, for this user."""
    mounts, groups = _mounts(), _own_groups()
    if _v2_parent(mounts, groups):
        return V2
    if _v1_parents(mounts, groups):
        return V1
    return TMPFS


class Group:
    """The control group of one sandbox: made before it starts, joined by its first process before it runs
    anything (`join`, in the forked child), asked afterwards whether the kernel killed for memory, then removed."""

    def __init__(self, name: str, memory_bytes: int, processes: int):
        self.name, self.memory_bytes, self.processes = name, memory_bytes, processes
        self.folders: dict[str, str] = {}  # controller ("v2", "memory", "pids") -> the group's folder
        self.kind = TMPFS

    def make(self) -> "Group":
        """Make the group (nothing if the machine gives none: `kind` stays TMPFS)."""
        mounts, groups = _mounts(), _own_groups()
        v2 = _v2_parent(mounts, groups)
        try:
            if v2:
                self._make("v2", v2, {"memory.max": self.memory_bytes, "memory.swap.max": 0,
                                      "pids.max": self.processes})
                self.kind = V2
            elif (v1 := _v1_parents(mounts, groups)) is not None:
                self._make("memory", v1["memory"], {"memory.limit_in_bytes": self.memory_bytes,
                                                     "memory.memsw.limit_in_bytes": self.memory_bytes})
                if "pids" in v1:
                    self._make("pids", v1["pids"], {"pids.max": self.processes})
                self.kind = V1
        except OSError:
            self.remove()
            self.kind = TMPFS
        return self

    def _make(self, controller: str, parent: str, settings: dict[str, int]) -> None:
        folder = os.path.join(parent, self.name)
        os.mkdir(folder)
        self.folders[controller] = folder
        for name, value in settings.items():
            path = os.path.join(folder, name)
            optional = name.endswith("swap.max") or name.startswith("memory.memsw")  # no swap here: none to cap
            try:
                with open(path, "w", encoding="ascii") as f:
                    f.write(str(value))
            except OSError:
                if not optional:
                    raise

    def join(self) -> None:
        """Put the calling process in the group (in the sandbox's forked child, before exec): everything it
        starts is in it too."""
        pid = str(os.getpid())
        for folder in self.folders.values():
            with open(os.path.join(folder, "cgroup.procs"), "w", encoding="ascii") as f:
                f.write(pid)

    def oom_kills(self) -> int:
        """How many processes the kernel has killed in the group for its memory limit."""
        if self.kind == V2:
            return _field(os.path.join(self.folders["v2"], "memory.events"), "oom_kill")
        if self.kind == V1:
            return _field(os.path.join(self.folders["memory"], "memory.oom_control"), "oom_kill")
        return 0

    def forks_refused(self) -> int:
        """How many times the group's process limit refused a new process."""
        folder = self.folders.get("v2") or self.folders.get("pids")
        return _field(os.path.join(folder, "pids.events"), "max") if folder else 0

    def peak(self) -> int:
        """The most memory the group held at once (bytes), where the kernel says it; else 0."""
        names = {V2: ("v2", "memory.peak"), V1: ("memory", "memory.max_usage_in_bytes")}
        if self.kind not in names:
            return 0
        controller, name = names[self.kind]
        try:
            with open(os.path.join(self.folders[controller], name), encoding="ascii") as f:
                return int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            return 0

    def remove(self, seconds: float = 5.0) -> None:
        """Remove the group once its processes are gone (the kernel lets go of them a moment after they die)."""
        deadline = time.monotonic() + seconds
        for folder in list(self.folders.values()):
            while True:
                try:
                    os.rmdir(folder)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.02)
        self.folders.clear()


def _field(path: str, key: str) -> int:
    try:
        with open(path, encoding="ascii") as f:
            for line in f:
                name, _, value = line.partition(" ")
                if name == key:
                    return int(value)
    except (OSError, ValueError):
        pass
    return 0



def groups_named(prefix: str) -> list[str]:
    """The folders of the groups under this process's own whose names start with `prefix` (an interrupted grade's,
    for the next grade to remove)."""
    mounts, groups = _mounts(), _own_groups()
    found = []
    for controller in ("v2", "memory", "pids"):
        if controller in mounts and controller in groups:
            parent = os.path.join(mounts[controller], groups[controller].lstrip("/"))
            try:
                found += [os.path.join(parent, n) for n in sorted(os.listdir(parent)) if n.startswith(prefix)]
            except OSError:
                pass
    return found
