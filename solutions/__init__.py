"""Reference answers to the HWM Lab exercises: the same interface as `exercises/`, see `lab.core.interface`."""

import importlib

from lab.core.interface import EXERCISES

__all__ = []
for _exercise in EXERCISES:  # each file of lab/core/interface.py's table, and its functions
    _module = importlib.import_module(f".{_exercise.file}", __name__)
    for _name in _exercise.names:
        globals()[_name] = getattr(_module, _name)  # (in place of the module high_water_mark.py, of the same name)
        __all__.append(_name)
del _exercise, _module, _name
