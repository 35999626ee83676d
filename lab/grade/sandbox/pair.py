"""One submission on an executor, in two sandboxes joined by a socket this task hands over: the harness
(lab.grade.sandbox.harness_box) and the student's processes (lab.grade.sandbox.student_box), watched and ended by the task."""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import time
import uuid

from lab.grade.sandbox import cgroups
from lab.grade.sandbox import bubblewrap
from lab.grade.sandbox import seccomp


REPLY_SECONDS = 60.0  # for the student's first process to answer the task (it runs nothing of the student's)


class Students:
    """The student's sandbox of one submission: its first process (lab.grade.sandbox.student_box) forks one process per exercise
    when the harness asks; the task hands the harness its end of that process's socket."""

    def __init__(self, workdir: str, lab_view: str, limits: bubblewrap.Limits, tool: str | None, name: str = ""):
        self.workdir, self.lab_view, self.limits, self.tool = workdir, lab_view, limits, tool
        self.code = os.path.join(workdir, "code")
        self.stderr = os.path.join(workdir, "student-stderr.txt")
        self.process: subprocess.Popen | None = None
        self.control: socket.socket | None = None
        self.said: str | None = None  # why the task killed the sandbox, if it did
        self.number = 0
        self.started = 0
        self.group = group(limits, tool, f"{name or os.getpid()}-student")
        self.box = bubblewrap.Box.of(limits, bubblewrap.STUDENT, self.group.kind)
        self.oom_seen = 0  # the group's memory kills counted so far
        self.forks_refused = 0  # and the new processes its limit refused
        self.peak = 0  # the most memory it held at once, once closed (bytes; 0 where no group measures it)

    def prepare(self) -> None:
        """Start the sandbox (its first process imports the lab's side of the wire meanwhile)."""
        self.stop()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        filter_fd = seccomp.memfd() if self.tool else -1
        try:
            argv = bubblewrap.student_command(self.tool, self.lab_view, self.code, theirs.fileno(), self.box, filter_fd)
            env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONPATH": self.lab_view,
                   "TMPDIR": os.path.join(self.workdir, "tmp"), "HOME": self.code}
            fds = (theirs.fileno(), filter_fd) if self.tool else (theirs.fileno(),)
            self.process = bubblewrap.start(argv, self.code, self.limits, self.stderr, env, fds, self.box,
                                         self.group if self.tool else None)
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
            if filter_fd >= 0:
                os.close(filter_fd)
        self.control, self.said = ours, None

    def stop(self) -> None:
        if self.process is not None:
            bubblewrap.kill(self.process)
            self.process = None
        if self.control is not None:
            self.control.close()
            self.control = None

    def close(self) -> None:
        """Stop the sandbox for good, and remove its control group (its peak memory is kept in `peak`)."""
        self.stop()
        self.peak = self.group.peak()
        self.group.remove()

    def out_of_memory(self) -> bool:
        """Whether the kernel killed a process of the sandbox for its memory since the last time asked."""
        seen, self.oom_seen = self.oom_seen, self.group.oom_kills()
        return self.oom_seen > seen

    def crowded(self) -> bool:
        """Whether the sandbox holds more processes than allowed; if so it is stopped (the harness learns it when
        it asks how the exercise's process ended)."""
        if self.process is None:
            return False
        refused, self.forks_refused = self.forks_refused, self.group.forks_refused()
        if self.forks_refused == refused and not bubblewrap.too_many([self.process], self.limits.processes):
            return False
        self.stop()
        self.said = bubblewrap.PROCESSES
        return True

    def _ask(self, request: list, fd: int | None = None):
        """A request to the sandbox's first process; its reply (None if it does not answer in time)."""
        self.number += 1
        message = json.dumps([self.number, *request]).encode()
        try:
            if fd is None:
                self.control.send(message)
            else:
                socket.send_fds(self.control, [message], [fd])
            deadline = time.monotonic() + REPLY_SECONDS
            while select.select([self.control], [], [], max(0.0, deadline - time.monotonic()))[0]:
                data = self.control.recv(65536)
                reply = json.loads(data) if data else None
                if type(reply) is list and len(reply) == 2 and reply[0] == self.number:
                    return reply[1]
                if not data:
                    break
        except (OSError, ValueError):
            pass
        return None

    def start(self, module: str, functions: list[str], limit: float) -> socket.socket:
        """A process for one exercise (the one before it is ended first); returns the harness's end of its
        socket."""
        if self.process is None or self.process.poll() is not None:
            self.prepare()
        ours, theirs = socket.socketpair()
        try:
            if self._ask(["start", limit, self.limits.cpu_seconds, module, functions], theirs.fileno()) is None:
                self.stop()  # the harness finds the socket closed, and asks how the process ended
            self.started += 1
        finally:
            theirs.close()
        return ours

    def end(self, wait: float) -> str:
        """End the exercise's process (after `wait` seconds for it to end by itself) and say how it ended: "" when
        there is none, "stopped" when it was stopped, else its status (lab.grade.sandbox.bubblewrap.classify)."""
        self.crowded()
        if self.said:
            said, self.said = self.said, None
            return said
        if self.process is None:
            return ""
        if self.process.poll() is not None:  # the whole sandbox ended
            code = self.process.returncode
            self.stop()
            return bubblewrap.MEMORY if self.out_of_memory() else bubblewrap.classify(code, bubblewrap.tail(self.stderr))
        code = self._ask(["end", wait])
        if code is None:
            self.stop()
            return bubblewrap.MEMORY if self.out_of_memory() else "stopped"
        if self.out_of_memory():  # its memory (its scratch included) went over the limit: the kernel killed; a
            self.stop()  # new sandbox has a new, empty scratch
            return bubblewrap.MEMORY
        if code in ("", "stopped"):
            return code
        return bubblewrap.classify(code, "") if type(code) is int else "stopped"

    def running(self) -> list[subprocess.Popen]:
        return [self.process] if self.process is not None else []

    def step(self, control: socket.socket) -> bool:
        """One look at the sandbox's processes, and the harness's next request if one comes within WATCH_SECONDS;
        False once the harness has closed its end."""
        self.crowded()
        return self.serve_one(control)

    def serve_one(self, control: socket.socket) -> bool:
        """The harness's next request, if one comes within WATCH_SECONDS; False once it has closed its end."""
        if not select.select([control], [], [], bubblewrap.WATCH_SECONDS)[0]:
            return True
        data = control.recv(65536)
        if data:
            self.answer(control, data)
        return bool(data)

    def answer(self, control: socket.socket, data: bytes) -> None:
        """One request of the harness: ["start", module, functions, limit] or ["end", wait seconds]."""
        try:
            number, what, *rest = json.loads(data)
            if what == "start":
                module, functions, limit = rest
                ours = self.start(str(module), [str(f) for f in functions], float(limit))
                try:
                    socket.send_fds(control, [json.dumps([number, "started"]).encode()], [ours.fileno()])
                finally:
                    ours.close()
            elif what == "end":
                control.send(json.dumps([number, self.end(min(float(rest[0]), 5.0))]).encode())
        except (ValueError, TypeError) as exc:
            control.send(json.dumps([0, f"not a request: {str(exc)[:100]}"]).encode())


def group(limits: bubblewrap.Limits, tool: str | None, name: str) -> cgroups.Group:
    """A sandbox's control group (made where the machine gives one; none for a grade without bubblewrap)."""
    made = cgroups.Group(f"{cgroups.PREFIX}{name}-{uuid.uuid4().hex[:8]}", limits.memory_mb * bubblewrap.MiB,
                         limits.processes + 4)
    return made.make() if tool else made


def run(workdir: str, lab_root: str, lab_view: str, limits: bubblewrap.Limits, tool: str | None,
        wall_seconds: float, name: str = "") -> bubblewrap.Outcome:
    """The harness of one submission (WORKDIR/box/task.json), with its student's processes, to the end or until a
    limit stops it (`wall_seconds`: the submission's budget); what it wrote is in WORKDIR/box/out."""
    started = time.monotonic()
    box = os.path.join(workdir, "box")
    control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    stderr = os.path.join(workdir, "stderr.txt")
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONPATH": lab_root, "HOME": box,
           "TMPDIR": os.path.join(workdir, "tmp"), "PYTHONDONTWRITEBYTECODE": "1"}
    own = group(limits, tool, f"{name or os.getpid()}-harness")
    spec = bubblewrap.Box.of(limits, bubblewrap.HARNESS, own.kind)
    filter_fd = seccomp.memfd() if tool else -1
    students = None
    try:
        if tool and os.geteuid() == 0:
            _give(box, spec.uid)  # the harness writes there, as the box's user
        argv = bubblewrap.harness_command(tool, lab_root, box, theirs.fileno(), spec, filter_fd)
        fds = (theirs.fileno(), filter_fd) if tool else (theirs.fileno(),)
        harness = bubblewrap.start(argv, box, limits, stderr, env, fds, spec, own if tool else None)
    except BaseException:
        own.remove()
        control.close()
        raise
    finally:
        theirs.close()
        if filter_fd >= 0:
            os.close(filter_fd)
    status = None
    listening = True
    out_of_time = False
    peak = 0
    try:
        students = Students(workdir, lab_view, limits, tool, name)
        students.prepare()
        while harness.poll() is None:
            if time.monotonic() - started > wall_seconds:
                status, out_of_time = bubblewrap.TIMEOUT, True
                break
            crowded = bubblewrap.too_many([harness, *students.running()], limits.processes)
            if harness in crowded:
                status = bubblewrap.PROCESSES
                break
            if crowded:
                students.crowded()
            if listening:
                listening = students.serve_one(control)
            else:
                time.sleep(bubblewrap.WATCH_SECONDS)
    finally:
        if students is not None:
            students.close()
            peak = students.peak
        bubblewrap.kill(harness)
        control.close()
        own.remove()
    said = bubblewrap.tail(stderr)
    code = harness.returncode
    return bubblewrap.Outcome(status or bubblewrap.classify(code, said), code, time.monotonic() - started, said,
                           out_of_time, peak)


def _give(folder: str, uid: int) -> None:
    """The folder (and what is in it) to the sandbox's user: it is the only one the harness may write to."""
    for root, dirs, files in os.walk(folder):
        for name in [root, *(os.path.join(root, n) for n in dirs + files)]:
            os.chown(name, uid, uid, follow_symlinks=False)
