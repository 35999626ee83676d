"""The breadth-first search's levels on several cores: worker processes expand the frontier's states, and this
process keeps the one visited set. The same runs are found as by one process (`search.bfs`).

Once the frontier is large enough, its states are dealt to the workers in turn and the workers are forked, so no
world is ever copied between processes; a successor's world stays with the worker that made it. Workers send the
keys of each state's new successors as they go; this process takes the states in the frontier's order, as one
process would walk it, and decides which successors are new. It can stop a level at the bound of states at once,
since the workers walk the level side by side rather than in halves.
"""

from __future__ import annotations

import multiprocessing
from collections import deque
from typing import Callable

SPLIT = 64  # frontier states per worker before the search is dealt out: below it, forking costs more than it saves
BATCH = 128  # successors' keys a worker gathers before it sends them


def levels(search, config, frontier: list, seen: set, bounds, first: int, depth: int, max_states: int,
           deadline: float, figures, tick: Callable[[], None], jobs: int):
    """Levels `first`..`depth` of `search._bfs` from `frontier`, in `jobs` worker processes. `search`: the module
    lab.explore.search (its `_level`, `run`, `Found` and `OutOfTime`), handed in: it imports this one."""
    context = multiprocessing.get_context("fork")
    workers = []
    for part in range(jobs):
        mine, theirs = context.Pipe()
        process = context.Process(target=_worker, daemon=True,
                                  args=(theirs, search, config, frontier[part::jobs], seen, bounds, deadline, figures))
        process.start()
        theirs.close()
        workers.append((process, mine))
    owners = [i % jobs for i in range(len(frontier))]  # which worker holds each state of the level, in order
    frontier.clear()  # the workers hold the worlds now
    try:
        for level in range(first, depth + 1):
            pending = [deque() for _ in workers]
            masks, kept, following = [[] for _ in workers], [], []
            for owner in owners:
                keys, found = _next_state(workers[owner][1], pending[owner], tick, search)
                for key in keys:
                    new = key not in seen
                    masks[owner].append(new)
                    if new:
                        seen.add(key)
                        figures.distinct += 1
                        kept.append(key)
                        following.append(owner)
                        if len(seen) >= max_states:
                            return None
                if found is not None:  # the first run, in the one-process order, that broke a rule
                    done, violation, _ = search.run(config, found)
                    return search.Found(config, done, violation, "bfs")
            for (_, conn), left in zip(workers, pending):  # every state of the level was read: nothing is left
                message = _message(conn, tick, search)
                while message[0] == "states" and not left and not message[1]:
                    message = _message(conn, tick, search)
                if left or message[0] != "end":
                    raise RuntimeError(f"a worker of the breadth-first search sent more states than its level held "
                                       f"({len(left)} left, then {message[0]})")
            figures.depth = max(figures.depth, level)
            if not kept or level == depth:
                return None
            for (_, conn), mask in zip(workers, masks):
                conn.send(("next", mask, kept))
            owners = following
        return None
    finally:
        for process, conn in workers:
            _gather(process, conn, figures)


def _next_state(conn, pending: deque, tick, search) -> tuple[list, tuple | None]:
    """The next state's (keys of its new successors, the run that broke a rule or None) from one worker."""
    while not pending:
        message = _message(conn, tick, search)
        if message[0] != "states":
            raise RuntimeError(f"a worker of the breadth-first search ended its level early ({message[0]})")
        pending.extend(message[1])
    return pending.popleft()


def _message(conn, tick, search):
    message = _receive(conn, tick)
    if message[0] == "late":
        raise search.OutOfTime
    return message


def _receive(conn, tick):
    while not conn.poll(0.2):
        tick()
    try:
        return conn.recv()
    except EOFError:
        raise RuntimeError("a worker of the breadth-first search ended without its level") from None


def _gather(process, conn, figures) -> None:
    """What a worker reached, added to this search's figures; the worker ends."""
    try:
        conn.send(("stop",))
        while conn.poll(30):  # what the worker sent before it read the stop, then its figures
            message = conn.recv()
            if message[0] != "figures":
                continue
            _, states, choices, calls, inputs, lines, called, unwritten = message
            figures.states += states
            reach = figures.reach
            for kind, count in choices.items():
                reach.choices[kind] = reach.choices.get(kind, 0) + count
            for function, count in calls.items():
                reach.calls[function] = reach.calls.get(function, 0) + count
            for function, ranges in inputs.items():
                mine = reach.inputs.setdefault(function, {})
                for name, (low, high) in ranges.items():
                    was = mine.get(name)
                    mine[name] = [low, high] if was is None else [min(was[0], low), max(was[1], high)]
            for function, numbers in lines.items():
                reach.lines.setdefault(function, set()).update(numbers)
            figures.called |= called
            figures.unwritten |= unwritten
            break
    except (OSError, EOFError):  # the worker is gone: what it reached is lost, not the search
        pass
    finally:
        conn.close()
        process.join(5)
        if process.is_alive():
            process.kill()
            process.join(5)


def _worker(conn, search, config, frontier, seen, bounds, deadline, figures) -> None:
    """A forked worker: expands its states of each level, in their order, and keeps the worlds of the successors
    this process finds new."""
    reach = figures.reach
    choices_before, calls_before = dict(reach.choices), dict(reach.calls)
    figures.states = 0
    heard = frontier[0][0] if frontier else None  # the worlds of a search share what they heard (`World.called`)
    frontier = _Level(frontier)
    try:
        while _expand(conn, search, config, frontier, seen, bounds, deadline, figures):
            command = conn.recv()
            if command[0] != "next":
                break
            _, mask, kept = command
            frontier = _Level(c for c, new in zip(frontier.children, mask) if new)
            seen.update(kept)
    finally:
        try:
            conn.send(("figures", figures.states,
                       {k: v - choices_before.get(k, 0) for k, v in reach.choices.items()},
                       {k: v - calls_before.get(k, 0) for k, v in reach.calls.items()},
                       reach.inputs, reach.lines,
                       set(heard.called) if heard else set(), set(heard.unwritten) if heard else set()))
        except (OSError, ValueError):
            pass
        conn.close()


class _Level(list):
    """A worker's states of one level; `children`: the successors it made, in order, for the next."""
    children: list


def _expand(conn, search, config, frontier: _Level, seen, bounds, deadline, figures) -> bool:
    """One level of this worker's states; False when told to stop before its end, or out of time."""
    children = frontier.children = []
    batch, size = [], 0
    try:
        for state in frontier:
            keys, found = [], None
            for item in search._level(config, [state], bounds, seen, figures, deadline, lambda: None):
                if isinstance(item, search.Found):
                    found = item.choices
                    break
                child, path, key = item
                seen.add(key)  # a later duplicate of it, here, is left out here
                keys.append(key)
                children.append((child, path))
            batch.append((keys, found))
            size += len(keys) + 1
            if found is not None:
                break
            if size >= BATCH:
                conn.send(("states", batch))
                batch, size = [], 0
                if conn.poll():  # told to stop: the bound of states was reached, or a rule broken, before
                    return False
    except search.OutOfTime:
        conn.send(("late",))
        return False
    conn.send(("states", batch))
    conn.send(("end",))
    return True


__all__ = ["levels", "SPLIT"]
