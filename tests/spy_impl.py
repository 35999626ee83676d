"""The reference answers, with every call of an exercise function counted: one byte appended per call to
HWM_SPY_DIR/<function>.<pid> (a file per process, so node processes count too, even when they are killed)."""

import os

import solutions
from lab.core.interface import FUNCTIONS


def _spy(name):
    reference = getattr(solutions, name)

    def spy(*args, **kwargs):
        where = os.environ.get("HWM_SPY_DIR")
        if where:
            with open(os.path.join(where, f"{name}.{os.getpid()}"), "ab") as f:
                f.write(b".")
        return reference(*args, **kwargs)

    spy.__name__ = name
    return spy


globals().update({name: _spy(name) for name in FUNCTIONS})  # every function of lab/core/interface.py's table


def calls(where) -> dict[str, int]:
    """How many calls of each function were counted in the directory `where`."""
    counts: dict[str, int] = {}
    for path in os.scandir(where):
        name = path.name.split(".")[0]
        counts[name] = counts.get(name, 0) + os.path.getsize(path.path)
    return counts
