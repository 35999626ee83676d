"""What a search reached, in the reader's language: the choices it made, each function of the student's called
with the range of its inputs, and the lines of its body that never ran (lab.sim.reach gathers them)."""

from __future__ import annotations

from lab.i18n import Joined, Listed, Text, counted, say
from lab.sim.reach import Reach

# The search's choices (lab.sim.choices.WALK_KINDS), each counted in the reader's language ("721 candidaturas").
CHOICES = {
    "deliver": lambda n: counted("{count} delivery", "{count} deliveries", n, count=n),
    "drop": lambda n: counted("{count} message lost", "{count} messages lost", n, count=n),
    "duplicate": lambda n: counted("{count} message duplicated", "{count} messages duplicated", n, count=n),
    "campaign": lambda n: counted("{count} campaign", "{count} campaigns", n, count=n),
    "heartbeat": lambda n: counted("{count} heartbeat sent", "{count} heartbeats sent", n, count=n),
    "write": lambda n: counted("{count} client write", "{count} client writes", n, count=n),
    "read": lambda n: counted("{count} client read", "{count} client reads", n, count=n),
    "kill": lambda n: counted("{count} crash", "{count} crashes", n, count=n),
    "restart": lambda n: counted("{count} restart", "{count} restarts", n, count=n),
    "pause": lambda n: counted("{count} node paused", "{count} nodes paused", n, count=n),
    "resume": lambda n: counted("{count} node resumed", "{count} nodes resumed", n, count=n),
    "cut": lambda n: counted("{count} link cut", "{count} links cut", n, count=n),
    "heal": lambda n: counted("{count} link healed", "{count} links healed", n, count=n),
    "sync": lambda n: counted("{count} fsync completed", "{count} fsyncs completed", n, count=n),
}

# Each input's range, said whole (the names are lab.sim.reach.INPUTS's).
RANGES = {
    "nodes": lambda lo, hi: say("match indexes of {low} to {high} nodes", low=lo, high=hi),
    "spread": lambda lo, hi: say("the highest match index {low} to {high} above the lowest", low=lo, high=hi),
    "acknowledged_minus_mark": lambda lo, hi: say("the index acknowledged {low} to {high} from the mark",
                                                  low=lo, high=hi),
    "generation": lambda lo, hi: say("generations {low} to {high}", low=lo, high=hi),
    "log_end": lambda lo, hi: say("logs of {low} to {high} entries", low=lo, high=hi),
    "prev_minus_log_end": lambda lo, hi: say("the previous index {low} to {high} from the log's end", low=lo,
                                             high=hi),
    "entries": lambda lo, hi: say("{low} to {high} entries sent", low=lo, high=hi),
    "index_minus_mark": lambda lo, hi: say("the index read {low} to {high} from the mark", low=lo, high=hi),
    "mark": lambda lo, hi: say("marks {low} to {high}", low=lo, high=hi),
    "segments": lambda lo, hi: say("logs of {low} to {high} segments", low=lo, high=hi),
    "segments_from_index": lambda lo, hi: say("{low} to {high} segments wholly at or after the cut", low=lo,
                                              high=hi),
    "index_minus_log_end": lambda lo, hi: say("the cut {low} to {high} from the log's end", low=lo, high=hi),
    "end_minus_log_end": lambda lo, hi: say("the leader's end {low} to {high} from the log's end", low=lo, high=hi),
}

SINGLE = {  # the same, when the search saw one value only
    "nodes": lambda v: say("match indexes of {value} nodes", value=v),
    "spread": lambda v: say("the highest match index {value} above the lowest", value=v),
    "acknowledged_minus_mark": lambda v: say("the index acknowledged {value} from the mark", value=v),
    "generation": lambda v: say("generation {value}", value=v),
    "log_end": lambda v: say("logs of {value} entries", value=v),
    "prev_minus_log_end": lambda v: say("the previous index {value} from the log's end", value=v),
    "entries": lambda v: say("{value} entries sent", value=v),
    "index_minus_mark": lambda v: say("the index read {value} from the mark", value=v),
    "mark": lambda v: say("mark {value}", value=v),
    "segments": lambda v: say("logs of {value} segments", value=v),
    "segments_from_index": lambda v: say("{value} segments wholly at or after the cut", value=v),
    "index_minus_log_end": lambda v: say("the cut {value} from the log's end", value=v),
    "end_minus_log_end": lambda v: say("the leader's end {value} from the log's end", value=v),
}


def _signed(n: int) -> str:
    return f"{n:+d}" if n else "0"


def _range(name: str, low: int, high: int) -> Text:
    signed = name.endswith(("_minus_mark", "_minus_log_end"))
    shown = (_signed(low), _signed(high)) if signed else (low, high)  # counts: said as the reader's language writes them
    if low == high:  # one value, said once: "match indexes of 3 nodes"
        return SINGLE[name](shown[0])
    return RANGES[name](*shown)


def sentences(reach: Reach) -> list[Text]:
    """One sentence for the choices made, then one per function of the student's: its calls and inputs, and the
    lines of its body that never ran."""
    out = []
    if reach.choices:
        made = Listed(CHOICES[kind](count) if kind in CHOICES else f"{kind} {count}"
                      for kind, count in sorted(reach.choices.items()))
        out.append(say("Searched: the choices made, by kind: {counts}.", counts=made))
    for function in sorted(set(reach.calls) | set(reach.code)):
        calls = reach.calls.get(function, 0)
        if not calls:
            out.append(say("Your {function} was never called.", function=function))
            continue
        ranges = Joined([_range(name, *seen) for name, seen in reach.inputs.get(function, {}).items()], ", ")
        out.append(say("Your {function} was called {calls} times, with {ranges}.", function=function, calls=calls,
                       ranges=ranges))
        lines = reach.lines_of(function)
        if lines and lines["never_run"]:
            out.append(say("These lines of its body never ran: {lines} (in {file}).",
                           lines=Listed(lines["never_run"]), file=_short(lines["file"])))
        elif lines:
            out.append(say("Every line of its body ran."))
    return out


def _short(path: str) -> str:
    parts = path.replace("\\", "/").split("/")
    return "/".join(parts[-2:])
