"""Calls into a student's code, guarded: a time limit on every call, the return type checked, and a failure that
names the function, its inputs and the student's own file and line (the lab's own frames left out).

`guarded(impl, limit)` returns an Impl whose functions raise `StudentFault` instead of hanging, crashing with a
bare exception, or handing the lab a value of the wrong type. NotImplementedError passes through unchanged: it
means "not started", which the checks report as such.
"""

from __future__ import annotations

import signal
import sys
import sysconfig
import threading
import traceback
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

from lab.core.interface import FUNCTIONS

DEFAULT_LIMIT = 1.0  # seconds a single call of a student's function may take
_INPUT_CHARS = 160  # a shown input longer than this is shortened
_LAB_DIR = str(Path(__file__).resolve().parents[1])  # lab/: its frames are the lab's, not the student's
_ROOT = Path(__file__).resolve().parents[2]  # the folder that holds lab/ (and solutions/, exercises/ beside it)
_STDLIB_DIRS = tuple({sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")})

# What each function must return, as (accepted types, how the docstring names it): lab.core.interface's table.
RETURNS: dict[str, tuple[tuple[type, ...], str]] = {f.name: (f.returns, f.returns_said) for f in FUNCTIONS.values()}

# The kinds of fault, as `StudentFault.kind`.
RAISED, TIMEOUT, WRONG_TYPE, IMPORT = "raised", "timeout", "wrong type", "import"
INTERRUPTED = "interrupted"  # Ctrl-C while the student's function ran (on the KeyboardInterrupt as `.fault`)
ENDED = "ended"  # the grader's: the process that ran the student's function ended during the call (lab.grade.proxy)


@dataclass(frozen=True)
class Fault:
    """What went wrong in one call of a student's function (plain data: it goes into traces and JSON)."""

    kind: str  # RAISED, TIMEOUT, WRONG_TYPE, IMPORT, INTERRUPTED or ENDED
    function: str
    inputs: str  # the call's arguments, shortened
    detail: str  # the exception's last line, the limit, or the wrong value and its type
    file: str  # the student's file (relative to the working folder when under it)
    line: int

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.file else ""

    def sentence(self) -> str:
        """One line of English (the catalogue of lab.i18n words it for a student; see lab.student.faults)."""
        call = f"{self.function}({self.inputs})"
        if self.kind == TIMEOUT:
            what = f"{call} did not return within {self.detail}"
        elif self.kind == WRONG_TYPE:
            what = f"{call} returned {self.detail}"
        elif self.kind == ENDED:
            what = f"{call} ended the student's process ({self.detail})"
        elif self.kind == INTERRUPTED:
            what = f"{call} was running"
        elif self.kind == IMPORT:
            what = f"{self.function}: the file does not import: {self.detail}"
        else:
            what = f"{call} raised {self.detail}"
        return f"{what} ({self.where})" if self.where else what

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "function": self.function, "inputs": self.inputs, "detail": self.detail,
                "file": self.file, "line": self.line}


class StudentFault(Exception):
    """A student's function raised, ran past its time limit, returned the wrong type, or did not import."""

    def __init__(self, fault: Fault):
        super().__init__(fault.sentence())
        self.fault = fault


class _CallTimeout(BaseException):
    """Raised inside the student's code by the alarm; a BaseException so that `except Exception` cannot eat it."""


def describe(value: Any, limit: int = _INPUT_CHARS) -> str:
    """A short, readable form of an argument: a log by its generations, entries by (index, generation)."""
    if hasattr(value, "log_end") and hasattr(value, "generation_at"):
        try:
            text = f"log(generations={[value.generation_at(i) for i in range(1, value.log_end + 1)]})"
        except Exception:
            text = f"log(log_end={value.log_end})"
    elif callable(value) and not isinstance(value, type):
        text = getattr(value, "__name__", "function")
    elif isinstance(value, (list, tuple)) and value and all(hasattr(v, "generation") and hasattr(v, "index")
                                                            for v in value):
        text = "[" + ", ".join(f"({v.index}, g{v.generation})" for v in value) + "]"
    elif isinstance(value, (list, tuple)) and value and all(hasattr(v, "first_index") for v in value):
        text = "[" + ", ".join(f"{v.path}: {v.first_index}-{max(v.offsets) if v.offsets else '-'}"
                               for v in value) + "]"
    else:
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe_call(args: tuple) -> str:
    return ", ".join(describe(a) for a in args)


def _shown_path(filename: str) -> str:
    """A file as a fault names it: from the folder that holds the lab (`solutions/leader.py`, `exercises/reads.py`),
    else from the current folder, else whole; the same on every machine, so that a run a student made and the
    grader's reproduction of it name a fault alike."""
    for base in (_ROOT, Path.cwd()):
        try:
            return str(Path(filename).resolve().relative_to(base))
        except (ValueError, OSError):
            continue
    return filename


def _is_students(filename: str) -> bool:
    return not filename.startswith(("<", _LAB_DIR, *_STDLIB_DIRS))


def _in_students_code(frame) -> bool:
    """Whether the interrupted frame runs for the student: the nearest frame that is the student's or this module's
    decides (the stdlib and the rest of the lab, called from either, do not)."""
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename == __file__:
            return False
        if _is_students(filename):
            return True
        frame = frame.f_back
    return False


def student_frame(tb, fn: Callable) -> tuple[str, int]:
    """The innermost frame of the traceback in the student's code; the function's own line when there is none."""
    best = None
    for frame, line in traceback.walk_tb(tb):
        if _is_students(frame.f_code.co_filename):
            best = (frame.f_code.co_filename, line)
    if best is None:
        code = getattr(fn, "__code__", None)
        if code is None:
            return "", 0
        best = (code.co_filename, code.co_firstlineno)
    return _shown_path(best[0]), best[1]


try:  # the C function itself: signal.getsignal's enum conversions cost more than the check is worth, every call
    from _signal import getsignal as _getsignal
except ImportError:  # pragma: no cover - another Python than CPython
    _getsignal = signal.getsignal
_SIGALRM = int(getattr(signal, "SIGALRM", 14))


class _Alarm:
    """One interval timer for the outermost guarded call of the main thread; nested calls share it."""

    def __init__(self):
        self.depth = 0
        self.installed = False
        self.handler = self._fire  # one bound method, so that `is` can tell it is still installed

    def usable(self) -> bool:
        return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()

    def _fire(self, signum, frame):
        # Only into the student's code: a repeat that finds the guard already building the fault (or returning a
        # result just past the limit) is ignored, so no _CallTimeout escapes from the guard's own lines.
        if _in_students_code(frame):
            raise _CallTimeout()

    def stop(self) -> None:
        """No more firing for this outermost call (its time is up and the fault is being built)."""
        if self.depth:
            signal.setitimer(signal.ITIMER_REAL, 0)

    def arm(self, limit: float) -> bool:
        if not self.usable():
            return False
        if self.depth == 0:
            if _getsignal(_SIGALRM) is not self.handler:  # (each `self._fire` is a new object)
                signal.signal(signal.SIGALRM, self.handler)
            # It keeps firing every 50 ms after the limit, so that a bare `except:` in a loop cannot swallow it.
            signal.setitimer(signal.ITIMER_REAL, limit, 0.05)
        self.depth += 1
        return True

    def disarm(self) -> None:
        self.depth -= 1
        if self.depth == 0:
            signal.setitimer(signal.ITIMER_REAL, 0)


_ALARM = _Alarm()


def guard_function(name: str, fn: Callable, limit: float = DEFAULT_LIMIT) -> Callable:
    """`fn` with a time limit per call, its return type checked and its failures raised as StudentFault."""
    accepted, named = RETURNS.get(name, ((object,), "anything"))

    def call(*args):
        armed = _ALARM.arm(limit)
        try:
            result = fn(*args)
        except (StudentFault, NotImplementedError):
            raise
        except KeyboardInterrupt as exc:  # Ctrl-C: the command says which call of the student's was running
            if getattr(exc, "fault", None) is None:
                file, line = student_frame(exc.__traceback__, fn)
                exc.fault = Fault(INTERRUPTED, name, describe_call(args), "", file, line)
            raise
        except _CallTimeout as exc:
            _ALARM.stop()
            file, line = student_frame(exc.__traceback__, fn)
            raise StudentFault(Fault(TIMEOUT, name, describe_call(args), f"{limit:g} s", file, line)) from None
        except RecursionError as exc:
            file, line = student_frame(exc.__traceback__, fn)
            raise StudentFault(Fault(RAISED, name, describe_call(args), "RecursionError: maximum recursion depth "
                                     "exceeded", file, line)) from None
        except Exception as exc:
            file, line = student_frame(exc.__traceback__, fn)
            detail = traceback.format_exception_only(type(exc), exc)[-1].strip()
            raise StudentFault(Fault(RAISED, name, describe_call(args), detail, file, line)) from exc
        finally:
            if armed:
                _ALARM.disarm()
        if not isinstance(result, accepted) or (isinstance(result, bool) and bool not in accepted):
            file, line = student_frame(None, fn)
            raise StudentFault(Fault(WRONG_TYPE, name, describe_call(args),
                                     f"{describe(result, 60)} of type {type(result).__name__}, expected {named}",
                                     file, line))
        return result

    call.__name__ = getattr(fn, "__name__", name)
    call.__wrapped__ = fn
    call.guard_limit = limit
    return call


def guarded(impl, limit: float = DEFAULT_LIMIT):
    """The same implementation (a lab.core.impl.Impl) with every function guarded (the reference answers too: they
    are cheap to guard and a lab bug should be reported as clearly as a student's). An implementation guarded
    already keeps its guard and its limit: whoever guarded it first set the policy (the grader's sandbox does, with
    the rubric's limit and a watch on every fault; the simulator and the checks it then runs must not strip them)."""
    if getattr(impl.high_water_mark, "guard_limit", None) is not None:
        return impl
    return replace(impl, **{f: guard_function(f, _unguarded(getattr(impl, f)), limit) for f in FUNCTIONS})


def _unguarded(fn: Callable) -> Callable:
    return fn.__wrapped__ if hasattr(fn, "guard_limit") else fn


def import_fault(function: str, exc: BaseException) -> Fault:
    """The failure of a student's file to import: where (the line of a syntax error, or the student's innermost
    frame) and the message."""
    detail = traceback.format_exception_only(type(exc), exc)[-1].strip()
    if isinstance(exc, SyntaxError) and exc.filename:
        file, line = _shown_path(exc.filename), exc.lineno or 0
    else:
        file, line = student_frame(exc.__traceback__, None)
    return Fault(IMPORT, function, "", detail, file, line)


def not_importable(function: str, exc: BaseException) -> Callable:
    """A stand-in for a function whose file does not import: each call raises that failure as a StudentFault."""
    fault = import_fault(function, exc)

    def call(*args):
        raise StudentFault(fault)

    call.__name__ = function
    call.import_fault = fault
    return call


def answers(fn: Callable, calls: list[tuple]):
    """fn's answer to each call, in order: in one batch where fn answers many at once (the grader's calls across to
    the student's process, lab.grade.proxy), else one call at a time. A call that fails raises where its answer is;
    the calls after it may have been made."""
    many = getattr(fn, "many", None)
    for answer in many(calls) if many else (fn(*args) for args in calls):
        if isinstance(answer, BaseException):
            raise answer
        yield answer


def fault_of(exc: BaseException) -> Fault | None:
    """The Fault behind an exception, also when the lab wrapped it on the way up."""
    seen = 0
    while exc is not None and seen < 20:
        if isinstance(exc, StudentFault):
            return exc.fault
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None


if sys.platform == "win32":  # pragma: no cover - the lab runs on Linux; no interval timer there
    _ALARM.usable = lambda: False  # type: ignore[method-assign]
