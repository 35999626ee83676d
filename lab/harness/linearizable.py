"""Is a history linearizable? The Wing & Gong search with Lowe's cache, as Porcupine runs it (anishathalye/porcupine
`checker.go`): operations are tried in an order that respects their intervals, a state and the set of operations
already placed are remembered so that no branch is searched twice, and a history is split into parts that the model
keeps apart (one register per log index) and each part searched alone.

The model here is the log's: each index is a register written once (the entry a leader commits there) and read
many times (served: its value; refused: nothing there yet). Pure functions, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Hashable, Iterable, NamedTuple

Instant = tuple  # (seconds, order): order breaks ties where the trace knows who came first
NEVER = (float("inf"), float("inf"))  # the end of an operation that never returned: it may take effect any time after


class Op(NamedTuple):
    """One operation for the search: `start` and `end` (NEVER: no answer), the model's `input` and `output`, and
    `ident`, what the caller knows it by."""

    start: Instant
    end: Instant
    input: Hashable
    output: Hashable
    ident: object


class Model(NamedTuple):
    """How a part's state starts and moves: `step(state, input, output)` gives (allowed, next state)."""

    init: Hashable
    step: Callable[[Hashable, Hashable, Hashable], tuple[bool, Hashable]]


WRITE, READ = "write", "read"


def _register_step(state, input, output):
    """A register written once: a write takes an empty register (`input` is (WRITE, value)); a read returns the
    value, None while empty."""
    kind, value = input
    if kind == WRITE:
        return state is None, value
    return output == state, state


REGISTER_ONCE = Model(init=None, step=_register_step)


@dataclass
class Verdict:
    """One part's search: `ok` True (an order was found), False (none exists) or None (the budget ran out);
    `order`, the longest prefix of operations that could be placed (the order found, when ok)."""

    ok: bool | None
    order: list
    steps: int


class _Entry:
    """A call or a return in the doubly linked list the search lifts operations out of."""

    __slots__ = ("op", "id", "is_call", "match", "prev", "next")

    def __init__(self, op, id, is_call):
        self.op, self.id, self.is_call = op, id, is_call
        self.match = self.prev = self.next = None


def _entries(ops: list[Op]) -> _Entry:
    """The list's head: calls and returns in time order, a call before a return at the same instant (intervals are
    closed: operations that touch are concurrent)."""
    points = []
    for k, op in enumerate(ops):
        call, ret = _Entry(op, k, True), _Entry(op, k, False)
        call.match = ret
        points += [(op.start, 0, k, call), (op.end, 1, k, ret)]
    points.sort(key=lambda p: p[:3])
    head = _Entry(None, -1, False)
    last = head
    for *_, entry in points:
        last.next, entry.prev = entry, last
        last = entry
    return head


def _lift(entry: _Entry) -> None:
    entry.prev.next = entry.next
    if entry.next is not None:
        entry.next.prev = entry.prev
    match = entry.match
    match.prev.next = match.next
    if match.next is not None:
        match.next.prev = match.prev


def _unlift(entry: _Entry) -> None:
    match = entry.match
    match.prev.next = match
    if match.next is not None:
        match.next.prev = match
    entry.prev.next = entry
    if entry.next is not None:
        entry.next.prev = entry


def check_part(ops: list[Op], model: Model = REGISTER_ONCE, budget: int = 1_000_000) -> Verdict:
    """Search one part for an order of its operations that respects their intervals and the model."""
    head = _entries(ops)
    state, placed, cache, stack, best = model.init, 0, set(), [], []
    entry, steps = head.next, 0
    while head.next is not None:
        steps += 1
        if steps > budget:
            return Verdict(None, best, steps)
        if entry.is_call:
            allowed, after = model.step(state, entry.op.input, entry.op.output)
            if allowed and (placed | 1 << entry.id, after) not in cache:
                cache.add((placed | 1 << entry.id, after))
                stack.append((entry, state))
                state, placed = after, placed | 1 << entry.id
                _lift(entry)
                if len(stack) > len(best):
                    best = [e.op for e, _ in stack]
                entry = head.next
            else:
                entry = entry.next
        else:  # an operation returned before any order placed it: undo the last choice
            if not stack:
                return Verdict(False, best, steps)
            entry, state = stack.pop()
            placed &= ~(1 << entry.id)
            _unlift(entry)
            entry = entry.next
    return Verdict(True, [e.op for e, _ in stack], steps)


def check(parts: dict[Hashable, Iterable[Op]], model: Model = REGISTER_ONCE,
          budget: int = 1_000_000) -> dict[Hashable, Verdict]:
    """Each part's verdict (Porcupine's P-compositionality: a history is linearizable when every part is)."""
    return {key: check_part(list(ops), model, budget) for key, ops in parts.items()}
