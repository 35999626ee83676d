"""HWM Lab exercises: write the key pieces of the High-Water Mark pattern.

Each module holds one exercise: a function with a fixed signature and a docstring that teaches; its body raises
NotImplementedError until you write it. Check your work with `hwm-lab exercise check N`; run the cluster on your
own code with `hwm-lab up --impl exercises`. The interface is described in lab/core/interface.py.

Each file is imported only when one of its functions is first asked for, so that a file that does not import yet
(a syntax error while you write it) breaks only its own exercise.
"""

import importlib

from lab.core.interface import EXERCISES

# Each function, and the file of this package that holds it (lab/core/interface.py's table).
_MODULES = {name: exercise.file for exercise in EXERCISES for name in exercise.names}

__all__ = list(_MODULES)


def __getattr__(name):
    if name not in _MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    function = getattr(importlib.import_module(f".{_MODULES[name]}", __name__), name)
    # Importing high_water_mark.py set this package's attribute of that name to the module: the function takes
    # its place, so that the next `exercises.high_water_mark` is the function again, not the module.
    globals()[name] = function
    return function


def __dir__():
    return sorted(list(globals()) + __all__)
