"""Load the pluggable pieces (`solutions`, `exercises`, or any module with the same names)."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable

FUNCTIONS = (
    "high_water_mark",
    "on_replication_response",
    "follower_append",
    "check_read",
    "plan_truncation",
    "leader_epoch_end",
    "epoch_truncation_point",
)


@dataclass(frozen=True, slots=True)
class Impl:
    name: str
    high_water_mark: Callable
    on_replication_response: Callable
    follower_append: Callable
    check_read: Callable
    plan_truncation: Callable
    leader_epoch_end: Callable
    epoch_truncation_point: Callable


class ImplError(Exception):
    pass


_cache: dict[str, Impl] = {}


def load(name: str = "solutions") -> Impl:
    """Import `name` and check it offers every function of `lab.interface`."""
    if name in _cache:
        return _cache[name]
    try:
        module = importlib.import_module(name)
    except ImportError as exc:
        raise ImplError(f"cannot import implementation {name!r}: {exc}") from exc
    missing = [f for f in FUNCTIONS if not callable(getattr(module, f, None))]
    if missing:
        raise ImplError(f"implementation {name!r} lacks {', '.join(missing)} (see lab/interface.py)")
    impl = Impl(name, *(getattr(module, f) for f in FUNCTIONS))
    _cache[name] = impl
    return impl
