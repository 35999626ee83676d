"""Load the pluggable pieces (`solutions`, `exercises`, or any module with the same names)."""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import make_dataclass
from typing import Callable

from lab.core.interface import FUNCTIONS

# One implementation: its name and one field per function of lab.core.interface's table, so that the replica and
# the simulator call `impl.high_water_mark(...)` as a plain attribute (a slot: as fast as a dataclass's field).
Impl = make_dataclass("Impl", [("name", str), *((f, Callable) for f in FUNCTIONS)], frozen=True, slots=True)
Impl.__module__ = __name__


class ImplError(Exception):
    pass


REFERENCE, STUDENT = "solutions", "exercises"
_cache: dict[str, Impl] = {}


def has_reference() -> bool:
    """Whether the reference answers are here: the course's repository, not a student's handout."""
    if REFERENCE in _cache:
        return True
    try:
        return importlib.util.find_spec(REFERENCE) is not None
    except ImportError:  # an import hook hides them (the grader's sandbox)
        return False


def student_functions(name: str) -> tuple[str, ...]:
    """The functions that `name` takes from a student's code: `MODULE:f1,f2` those named (the rest is the
    reference's), `solutions` none; in a handout (no reference) every function."""
    if not has_reference():
        return tuple(FUNCTIONS)
    if name == REFERENCE:
        return ()
    if ":" in name:
        wanted = name.split(":", 1)[1].split(",")
        return tuple(f for f in FUNCTIONS if f in wanted)
    return tuple(FUNCTIONS)


def load(name: str = "solutions") -> Impl:
    """Import `name` and check it offers every function of `lab.core.interface`.

    `MODULE:f1,f2` takes f1 and f2 from MODULE and everything else from `solutions`, so one exercise can be
    checked in a running cluster before the others are written. Where `solutions` is absent (a handout), it
    means `exercises`: the student's own code throughout.
    """
    if name in _cache:  # (first: once loaded, the reference stays, even where an import hook now hides it)
        return _cache[name]
    if name == REFERENCE and not has_reference():
        name = STUDENT  # a handout (`hwm-lab handout`): no reference answers, the student's own code instead
        if name in _cache:
            return _cache[name]
    if ":" in name:
        module_name, wanted = name.split(":", 1)
        functions = [f for f in wanted.split(",") if f]
        unknown = [f for f in functions if f not in FUNCTIONS]
        if unknown:
            from lab.core.reasons import UNKNOWN_FUNCTIONS, Reason

            raise ImplError(Reason(UNKNOWN_FUNCTIONS, spec=name, unknown=unknown, known=list(FUNCTIONS)))
        mine, reference = load(module_name), load("solutions")
        impl = Impl(name, *(getattr(mine if f in functions else reference, f) for f in FUNCTIONS))
        _cache[name] = impl
        return impl
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and name.startswith(exc.name):
            from lab.core.reasons import NO_MODULE, Reason

            raise ImplError(Reason(NO_MODULE, name=repr(name), module=repr(exc.name))) from exc
        from lab.core.guard import import_fault

        raise ImplError(import_fault(name, exc).sentence()) from exc
    except Exception as exc:  # the package's own __init__ does not import: say where, in two lines
        from lab.core.guard import import_fault

        raise ImplError(import_fault(name, exc).sentence()) from exc
    functions = {f: _function(module, f) for f in FUNCTIONS}
    missing = [f for f, fn in functions.items() if not callable(fn)]
    if missing:
        from lab.core.reasons import IMPL_DEFINES_NONE, IMPL_LACKS, Reason

        defined = [f for f in FUNCTIONS if f not in missing]
        if not defined:
            raise ImplError(Reason(IMPL_DEFINES_NONE, name=repr(name)))
        raise ImplError(Reason(IMPL_LACKS, name=repr(name), functions=missing, module=name, defined=",".join(defined)))
    impl = Impl(name, *functions.values())
    _cache[name] = impl
    return impl


def _function(module, name: str):
    """`module.name`; for a file of the package that does not import (a lazy package such as `exercises` imports
    each file on first use), a stand-in that raises that failure as the exercise's own, so the others still run."""
    try:
        return getattr(module, name, None)
    except Exception as exc:  # SyntaxError, ImportError, or anything the file raised while being imported
        from lab.core.guard import not_importable

        return not_importable(name, exc)
