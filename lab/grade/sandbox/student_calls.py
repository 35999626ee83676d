"""The harness's side of the student's process: the exercise's functions as calls across the socket, each under its
own time limit, the answers checked here; a hang, a death or garbage is that call's StudentFault."""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import MutableMapping
from dataclasses import replace

from lab.core.guard import ENDED, IMPORT, INTERRUPTED, RAISED, RETURNS, TIMEOUT, WRONG_TYPE, Fault, StudentFault
from lab.core.guard import describe_call, guarded
from lab.core.impl import Impl, load
from lab.grade.sandbox import wire

GRACE_SECONDS = 4.0  # past a call's limit, the harness's own clock: the student's process missed its alarm
HELLO_SECONDS = 60.0  # for the student's file to import (a file that loops at import meets the exercise's clock)
PROCESSES = "it started more processes than the grader allows"  # an ENDED fault's detail
KINDS = (RAISED, TIMEOUT, WRONG_TYPE, IMPORT, INTERRUPTED, ENDED)


class NotImportable(Exception):
    """The student's file does not import in its process; .fault says where and why."""

    def __init__(self, fault: Fault):
        super().__init__(fault.detail)
        self.fault = fault


class Control:
    """The harness's requests to the executor, over the socket it was started with: a student's process, and
    how one ended."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.number = 0

    def ask(self, request: list, with_fd: bool = False):
        self.number += 1
        number = f"{os.getpid()}-{self.number}"  # (the harness's exercise children share the socket, one at a time)
        self.sock.send(json.dumps([number, *request]).encode())
        while True:  # a reply to an earlier request (its asker killed before it read it) is left aside
            data, fds, _, _ = socket.recv_fds(self.sock, 65536, 1)
            if not data:
                raise EOFError("the executor is gone")
            reply = json.loads(data)
            if reply[0] == number:
                break
            for fd in fds:
                socket.socket(fileno=fd).close()
        if with_fd:
            if not fds:
                raise OSError(f"the executor could not start the student's process: {reply[1:]}")
            return reply[1:], fds[0]
        return reply[1:]


class Student:
    """The student's process for one exercise, as the harness sees it."""

    def __init__(self, control: Control, module: str, functions: list[str], limit: float):
        self.control, self.module, self.limit = control, module, limit
        self.functions = list(functions)
        self.channel: wire.Channel | None = None
        self.where: dict[str, tuple[str, int]] = {}  # function -> (the student's file, its def line)
        self.proxies: dict[int, str] = {}  # id of a proxy -> its function's name
        self.seq = 0
        self.started = 0
        self.crossed = 0  # calls and calls back that crossed the socket
        self.stopped: Fault | None = None  # the fault that ended the process for good (a storm of processes)

    def start(self) -> None:
        """Start the process and wait for its hello (NotImportable if the file does not import)."""
        _, fd = self.control.ask(["start", self.module, self.functions, self.limit], with_fd=True)
        channel = wire.Channel(socket.socket(fileno=fd))
        self.started += 1
        try:
            hello = channel.receive(time.monotonic() + HELLO_SECONDS)
        except TimeoutError:
            channel.close()
            self._end(0)
            raise NotImportable(Fault(TIMEOUT, self.functions[0], "", f"{HELLO_SECONDS:g} s to import",
                                      self.module, 0)) from None
        except (EOFError, wire.Garbage) as exc:
            channel.close()
            status = self._end(0.5)
            raise NotImportable(Fault(IMPORT, self.functions[0], "", f"the student's process ended before it "
                                      f"answered ({status or type(exc).__name__})", self.module, 0)) from None
        if type(hello) is list and hello[:1] == ["import"]:
            channel.close()
            self._end(0.5)
            raise NotImportable(_fault(hello[1] if len(hello) > 1 else {}, self.functions[0], "", IMPORT))
        if type(hello) is not list or hello[:1] != ["hello"] or type(hello[1]) is not dict:
            channel.close()
            self._end(0)
            raise NotImportable(Fault(IMPORT, self.functions[0], "", "the student's process said no hello",
                                      self.module, 0))
        self.where = {name: _where(hello[1].get(name), self.module) for name in self.functions}
        self.channel = channel

    def function(self, name: str):
        def call(*args):
            (answer,) = self.many(name, [args])
            if isinstance(answer, BaseException):
                raise answer
            return answer

        call.__name__ = name
        call.guard_limit = self.limit  # the guard's: an Impl that holds it is not guarded again
        call.__wrapped__ = call
        call.many = lambda calls: self.many(name, calls)
        self.proxies[id(call)] = name
        return call

    def _own(self, fn) -> str | None:
        return self.proxies.get(id(getattr(fn, "__wrapped__", fn)))

    def many(self, name: str, calls: list[tuple]) -> list:
        """The answers of `name` to each of the calls, in order, in one message each way (the student's process
        answers them one after the other, each under its own limit); a call that fails ends the list with its
        exception (StudentFault, or NotImplementedError: not started), the calls after it are not made."""
        if self.stopped is not None:
            return [StudentFault(replace(self.stopped, function=name, inputs=describe_call(calls[0])))]
        if self.channel is None:
            try:
                self.start()
            except NotImportable as exc:
                return [StudentFault(exc.fault)]
        first, answers = self.seq + 1, []
        self.seq += len(calls)
        self.crossed += len(calls)
        targets = [[] for _ in calls]
        try:
            self.channel.send(["call", first, name, [[wire.encode(a, t, self._own) for a in args]
                                                     for args, t in zip(calls, targets)]])
        except OSError:
            pass  # the process is gone: its answer below says how
        for n, args in enumerate(calls):
            answer = self._answer(name, args, first + n, targets[n])
            answers.append(answer)
            if isinstance(answer, BaseException):
                if n + 1 < len(calls) and self.channel is not None:  # it would answer the calls after it
                    self._lose(0)
                break
        return answers

    def _answer(self, name: str, args: tuple, seq: int, targets: list):
        """The answer to one call (the call back it asks for answered meanwhile), or the exception it ends in."""
        channel = self.channel
        deadline = time.monotonic() + self.limit + GRACE_SECONDS
        try:
            while True:
                message = channel.receive(deadline)
                if type(message) is not list or len(message) < 3 or message[1] != seq:
                    raise wire.Garbage(f"an unexpected message ({str(message)[:80]})")
                kind = message[0]
                if kind == "cb":
                    began = time.monotonic()
                    self._call_back(channel, message, targets)
                    deadline += time.monotonic() - began  # the harness's own time is not the call's
                elif kind == "ok" and len(message) == 4:
                    return self._result(name, args, message[2], message[3])
                elif kind == "fault":
                    fault = _fault(message[2], name, describe_call(args), RAISED)
                    if fault.detail.startswith("BlockingIOError") and self._lose(0.5) == "processes":
                        fault = self.stopped = _ended(name, fault.inputs, "processes", self.where[name])
                    return StudentFault(fault)
                elif kind == "todo":
                    return NotImplementedError(str(message[2])[:500])
                else:
                    raise wire.Garbage(f"an unexpected message ({str(message)[:80]})")
        except StudentFault as exc:
            return exc
        except TimeoutError:
            self._lose(0)
            return StudentFault(Fault(TIMEOUT, name, describe_call(args), f"{self.limit:g} s", *self.where[name]))
        except (EOFError, OSError, AttributeError):  # (no channel: it was lost during a call back)
            status = self._lose(1.0)
            fault = _ended(name, describe_call(args), status, self.where[name])
            if status in ("processes", "memory"):  # stopped for the exercise, as a program that forks or fills
                self.stopped = fault  # its memory without end is
            return StudentFault(fault)
        except wire.Garbage as exc:
            self._lose(0)
            return StudentFault(Fault(WRONG_TYPE, name, describe_call(args), f"something that is not an answer: {exc}",
                                      *self.where[name]))

    def _result(self, name: str, args: tuple, raw, changed):
        accepted, named = RETURNS[name]
        try:
            result = wire.decode(raw)
            if not isinstance(result, accepted) or (type(result) is bool and bool not in accepted):
                raise wire.Shape(f"{str(result)[:60]} of type {type(result).__name__}")
            for position, value in changed:  # what the student's function did to a list or dict it was handed
                _apply(args[position], wire.decode(value))
        except (wire.Shape, TypeError, ValueError, IndexError) as exc:
            detail = str(exc) if isinstance(exc, wire.Shape) else "a value that is not one of the interface's"
            raise StudentFault(Fault(WRONG_TYPE, name, describe_call(args), f"{detail}, expected {named}",
                                     *self.where[name])) from None
        return result

    def _call_back(self, channel: wire.Channel, message: list, targets: list) -> None:
        if len(message) != 5 or type(message[4]) is not list:
            raise wire.Garbage(f"an unexpected message ({str(message)[:80]})")
        _, seq, target, method, raw = message
        self.crossed += 1
        try:
            fn = targets[target] if method == "" else getattr(targets[target], {"entry_at": "entry_at"}[method])
            value = fn(*(wire.decode(a) for a in raw))
            channel.send(["answer", seq, wire.encode(value)])
        except StudentFault as exc:  # the harness's function refused what the student's code handed it
            kind, _, text = exc.fault.detail.partition(": ")
            channel.send(["raise", seq, kind, text[:500]])
        except (wire.Shape, KeyError, IndexError, TypeError, ValueError) as exc:
            channel.send(["raise", seq, type(exc).__name__, str(exc)[:500]])

    def _lose(self, wait: float) -> str:
        """The process is of no more use (it ended, hung or sent garbage): close it, and say how it ended."""
        if self.channel is not None:
            self.channel.close()
            self.channel = None
        return self._end(wait)

    def _end(self, wait: float) -> str:
        try:
            return str(self.control.ask(["end", wait])[0])
        except (OSError, EOFError, ValueError, IndexError):
            return ""

    def close(self) -> None:
        self._lose(0)


def _apply(arg, value) -> None:
    """What the student's function did to a list or table it was handed, done to the harness's own: key by key,
    as the function itself would have (the leader's match index table keeps its progress records)."""
    if type(arg) is list and type(value) is list:
        arg[:] = value
    elif isinstance(arg, MutableMapping) and type(value) is dict:
        for key in [k for k in arg if k not in value]:
            del arg[key]
        for key, new in value.items():
            if key not in arg or arg[key] != new:
                arg[key] = new


def _where(said, module: str) -> tuple[str, int]:
    if type(said) is list and len(said) == 2 and type(said[0]) is str and type(said[1]) is int:
        return said[0][:300], said[1]
    return module, 0


def _fault(said, name: str, inputs: str, kind: str) -> Fault:
    """A fault the student's process reported, checked field by field (it could say anything)."""
    said = said if type(said) is dict else {}
    got = said.get("kind")
    line = said.get("line")
    return Fault(got if got in KINDS else kind, name, inputs or str(said.get("inputs", ""))[:300],
                 str(said.get("detail", ""))[:500], str(said.get("file", ""))[:300],
                 line if type(line) is int and line >= 0 else 0)


def _ended(name: str, inputs: str, status: str, where: tuple[str, int]) -> Fault:
    """The fault of a call during which the student's process ended: as the executor saw it end."""
    if status == "timeout":  # its CPU time
        return Fault(TIMEOUT, name, inputs, "its CPU time", *where)
    if status == "memory":
        return Fault(RAISED, name, inputs, "MemoryError: the student's process ran out of memory", *where)
    if status == "processes":
        return Fault(ENDED, name, inputs, PROCESSES, *where)
    return Fault(ENDED, name, inputs, status.removeprefix("crashed: ") or "how is not known", *where)


def student_impl(task: dict, control: Control, watch=lambda fn: fn) -> tuple[Impl, Student]:
    """The Impl the runs use: the exercise's functions in the student's process, the rest the reference's (here,
    guarded); NotImportable if the student's file does not import."""
    student = Student(control, task["module"], task["functions"], task["call_seconds"])
    student.start()
    reference = guarded(load("solutions"), task["call_seconds"])
    mine = {name: watch(student.function(name)) for name in task["functions"]}
    return replace(reference, name=task["impl"], **mine), student
