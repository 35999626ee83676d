"""The student's process in the grader: a first process forks one per exercise, which imports the student's file and
answers the harness's calls one at a time, each under the guard; nothing else is in it (docs/security.md).

    python -S -B -m lab.grade.serve FD      (FD: its socket to the executor, which hands it each exercise's socket)
"""

from __future__ import annotations

import importlib
import json
import os
import resource
import signal
import socket
import sys
import time
import traceback
from pathlib import Path

from lab.core.guard import RAISED, WRONG_TYPE, Fault, StudentFault, describe_call, guard_function, import_fault
from lab.core.guard import student_frame
from lab.core.interface import Entry
from lab.grade import privileges, wire


class Served:
    """The student's functions behind the socket. A call back (a log's entry_at, a function handed in) is a message
    to the harness, whose answer may come after calls of its own (the harness calling the student's code again)."""

    def __init__(self, channel: wire.Channel, functions: dict):
        self.channel = channel
        self.functions = functions  # name -> the guarded function
        self.pid = os.getpid()
        self.calls: list[int] = []  # the numbers of the calls being answered, innermost last

    def serve(self) -> None:
        while True:
            message = self.channel.receive()
            if message[0] != "call":
                return
            self.answer(message)

    def answer(self, message) -> None:
        """["call", first number, name, [arguments of each call]]: each answered in turn, until one fails."""
        _, first, name, calls = message
        for n, raw in enumerate(calls):
            if not self.answer_one(first + n, name, raw):
                return

    def answer_one(self, seq: int, name: str, raw: list) -> bool:
        self.calls.append(seq)
        fn = self.functions[name]
        args: tuple = ()
        ok = False
        try:
            args = tuple(self.rebuild(a) for a in raw)
            before = [(i, type(a)(a)) for i, a in enumerate(args) if type(a) in (list, dict)]
            result = fn(*args)
            changed = [[i, wire.encode(args[i])] for i, was in before if args[i] != was]
            reply, ok = wire.frame(["ok", seq, wire.encode(result), changed]), True
        except StudentFault as exc:
            reply = wire.frame(["fault", seq, exc.fault.as_dict()])
        except NotImplementedError as exc:
            reply = wire.frame(["todo", seq, str(exc)[:500]])
        except BaseException as exc:  # SystemExit, KeyboardInterrupt, or a value that does not encode: the call's fault
            file, line = student_frame(exc.__traceback__, getattr(fn, "__wrapped__", fn))
            kind = WRONG_TYPE if isinstance(exc, (TypeError, ValueError, RecursionError)) else RAISED
            detail = traceback.format_exception_only(type(exc), exc)[-1].strip()
            reply = wire.frame(["fault", seq, Fault(kind, name, _shown(args), detail[:500], file, line).as_dict()])
        finally:
            self.calls.pop()
            if os.getpid() != self.pid:  # a fork of the student's returned here: it must not answer too
                os._exit(0)
        self.channel.send_frame(reply)
        return ok

    def rebuild(self, value):
        """A value the harness sent, as the student's function expects it."""
        if type(value) is list:
            return [self.rebuild(v) for v in value]
        if type(value) is not dict:
            return value
        (tag, body), = value.items()
        if tag == "t":
            return tuple(self.rebuild(v) for v in body)
        if tag == "d":
            return {self.rebuild(k): self.rebuild(v) for k, v in body}
        if tag == "l":
            return LogCopy(self, body[0], body[1])
        if tag == "f":
            return CallBack(self, body[0], body[1])
        if tag == "o":
            return self.functions[body]
        return wire.decode(value)  # an entry, a segment, a plan: the interface's own types

    def call_back(self, target: int, method: str, args: tuple):
        self.channel.send(["cb", self.calls[-1], target, method, [wire.encode(a) for a in args]])
        while True:
            message = self.channel.receive()
            if message[0] == "call":  # the harness's answer needs the student's code again
                self.answer(message)
                continue
            if message[0] == "answer":
                return self.rebuild(message[2])
            raise _exception(message[2], message[3])


def _shown(args: tuple) -> str:
    try:
        return describe_call(args)
    except BaseException:  # noqa: BLE001 - an argument the student's code changed into something odd
        return "..."


def _exception(name: str, text: str) -> Exception:
    """The exception a call back raised in the harness, raised again here (IndexError past a log's end, ...)."""
    import builtins

    kind = getattr(builtins, name, None)
    if isinstance(kind, type) and issubclass(kind, Exception) and kind is not StudentFault:
        return kind(text)
    return RuntimeError(text)


class CallBack:
    """A function handed to the student's function (high_water_mark, generation_at): answered by the harness."""

    def __init__(self, served: Served, target: int, name: str):
        self.served, self.target, self.__name__ = served, target, name

    def __call__(self, *args):
        return self.served.call_back(self.target, "", args)


class LogCopy:
    """A copy of a node's log for one call: its generations here, an entry's payload asked of the harness."""

    def __init__(self, served: Served, target: int, generations: list[int]):
        self._served, self._target, self._generations = served, target, generations

    @property
    def log_end(self) -> int:
        return len(self._generations)

    def generation_at(self, index: int) -> int:
        if index == 0:
            return 0
        if not 1 <= index <= len(self._generations):
            raise IndexError(f"no entry at index {index} (log end {len(self._generations)})")
        return self._generations[index - 1]

    def entry_at(self, index: int) -> Entry:
        if not 1 <= index <= len(self._generations):
            raise IndexError(f"no entry at index {index} (log end {len(self._generations)})")
        return self._served.call_back(self._target, "entry_at", (index,))

    def __repr__(self) -> str:
        return f"log(generations={self._generations})"


def load(module: str, names: list[str], limit: float) -> tuple[dict, dict]:
    """The student's functions, guarded, and where each is defined (file, line), from the files in the working
    folder: from `module`, or, for a function it does not hold, from that function's own exercise's file (a run
    made with the student's files of several exercises); an ImportError if a function is missing or is not defined
    there."""
    from lab.core.interface import EXERCISES

    code = Path.cwd().resolve()
    sys.path.insert(0, str(code))
    home = {name: row.path for row in EXERCISES for name in row.names}
    first = importlib.import_module("exercises." + Path(module).stem)
    functions, where = {}, {}
    for name in names:
        imported = first if callable(getattr(first, name, None)) or name not in home else \
            importlib.import_module("exercises." + Path(home[name]).stem)
        fn = getattr(imported, name, None)
        if not callable(fn):
            raise AttributeError(f"{module} has no function {name}")
        file = getattr(getattr(fn, "__code__", None), "co_filename", "")
        if not file or code not in Path(file).resolve().parents:
            raise ImportError(f"{name} is not defined in the submitted files")
        functions[name] = guard_function(name, fn, limit)
        where[name] = [str(Path(file).resolve().relative_to(code)), fn.__code__.co_firstlineno]
    return functions, where


EXIT_MEMORY = 70  # lab.grade.sandbox's: the process ran out of its address space


def serve(fd: int, limit: float, module: str, names: list[str]) -> int:
    """One exercise's process: import the student's file, say hello (or why it does not import), answer calls."""
    channel = wire.Channel(socket.socket(fileno=fd))
    try:
        functions, where = load(module, names, limit)
    except MemoryError:
        return EXIT_MEMORY
    except BaseException as exc:  # noqa: BLE001 - the student's file runs at import: anything can come out of it
        fault = import_fault(names[0] if names else module, exc)
        channel.send(["import", {**fault.as_dict(), "detail": f"{type(exc).__name__}: {str(exc)[:200]}"}])
        return 0
    channel.send(["hello", where])
    try:
        Served(channel, functions).serve()
    except (EOFError, OSError, wire.Garbage):  # the harness is done with this process
        pass
    except MemoryError:
        return EXIT_MEMORY
    return 0


class Forks:
    """The first process of the student's sandbox: it has imported the lab's side of the wire once, and forks one
    process per exercise on the executor's request (starting Python and the lab again would cost 0.1 s each).
    It runs nothing of the student's itself."""

    def __init__(self, control: socket.socket):
        self.control = control
        self.child: int | None = None

    def run(self) -> None:
        while True:
            data, fds, _, _ = socket.recv_fds(self.control, 65536, 1)
            if not data:
                return
            number, what, *rest = json.loads(data)
            if what == "start":
                reply = self.start(fds[0], *rest)
            else:
                reply = self.end(float(rest[0]))
            self.control.send(json.dumps([number, reply]).encode())

    def start(self, fd: int, limit: float, cpu_seconds: int, module: str, names: list[str]) -> str:
        self.end(0)
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                os.setpgid(0, 0)
                resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
                self.control.close()
                code = serve(fd, limit, module, names)
            finally:
                os._exit(code)  # no interpreter shutdown: a student's thread or atexit hook gets no last word
        os.close(fd)
        try:
            os.setpgid(pid, pid)  # (the child does it too: whichever runs first)
        except OSError:
            pass
        self.child = pid
        return "started"

    def end(self, wait: float):
        """End the exercise's process (after `wait` seconds for it to end by itself): its exit code, or "stopped"."""
        pid, self.child = self.child, None
        if pid is None:
            return ""
        deadline = time.monotonic() + wait
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                _kill(pid)  # whatever it left behind
                return os.waitstatus_to_exitcode(status)
            if time.monotonic() >= deadline:
                break
            time.sleep(0.005)
        _kill(pid)
        os.waitpid(pid, 0)
        return "stopped"


def _kill(group: int) -> None:
    for kill in (os.killpg, os.kill):
        try:
            kill(group, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def main(argv: list[str]) -> int:
    privileges.drop()  # before anything of the student's can run
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    Forks(socket.socket(fileno=int(argv[0]))).run()
    return 0


if __name__ == "__main__":
    os._exit(main(sys.argv[1:]))
