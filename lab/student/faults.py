"""A failure of the student's code in the student's words: the function, its inputs, what went wrong and the
student's own file and line; in a scenario also the node, the step and the scenario."""

from __future__ import annotations

import re

from lab.core.guard import IMPORT, INTERRUPTED, TIMEOUT, WRONG_TYPE, Fault
from lab.i18n import Joined, Text, say


_WRONG_TYPE = re.compile(r"(.*) of type (\w+), expected (.+)", re.DOTALL)


def as_fault(fault: Fault | dict) -> Fault:
    if isinstance(fault, Fault):
        return fault
    return Fault(**{k: fault[k] for k in ("kind", "function", "inputs", "detail", "file", "line")})


def fault_text(fault: Fault | dict) -> Text:
    """One line (two for a file that does not import: where, then the message)."""
    f = as_fault(fault)
    call = f"{f.function}({f.inputs})"
    if f.kind == IMPORT:
        return Joined([say("{where}: this file does not import, so {function} cannot run", where=f.where or "?",
                           function=f.function), f.detail], "\n")
    if f.kind == TIMEOUT:
        what = say("{call} did not return within {limit}", call=call, limit=f.detail)
    elif f.kind == INTERRUPTED:
        what = say("{call} was running", call=call)
    elif f.kind == WRONG_TYPE:
        typed = _WRONG_TYPE.fullmatch(f.detail)  # the guard's "VALUE of type T, expected NAMED"
        what = (say("{call} returned {value} of type {type}, expected {expected}", call=call, value=typed[1],
                    type=typed[2], expected=typed[3]) if typed else say("{call} returned {detail}", call=call,
                                                                        detail=f.detail))
    else:
        what = say("{call} raised {error}", call=call, error=f.detail)
    return say("{what} -- {where}", what=what, where=f.where) if f.where else what


def scenario_fault_text(fault: dict) -> Text:
    """A fault that stopped a node of a scenario: where in the scenario, then the fault itself."""
    return say("scenario {scenario}, step {step}: node {node} stopped: {fault}", scenario=fault.get("scenario") or "?",
               step=fault.get("step") or "?", node=fault.get("node") or "?", fault=fault_text(fault))


def interrupted_text(exc: KeyboardInterrupt) -> Text:
    """What Ctrl-C stopped: the student's call that was running (the guard marks the exception), if any."""
    fault = getattr(exc, "fault", None)
    return say("interrupted while {what}", what=fault_text(fault)) if fault else say("interrupted")
