"""A check's report in words: what `hwm-lab exercise check N` prints, in the student's language.

The exercise's own fault first, then what its runs wait for, then each rule, scenario and the exploration, each
line behind its mark (ok, BROKEN, FAIL, waits, not run); and the statuses a report, `exercise list` and a
submission say. It reads a report of lab.student.checks (CheckReport.text) and imports nothing of that module.
"""

from __future__ import annotations

from lab.i18n import Text, localize, say, word

STATUS = {"not started": say("NOT STARTED"), "failing": say("FAILING"), "passing": say("PASSING")}
STATUS_WORDS = {"not started": word("status", "not started"), "failing": word("status", "failing"),
                "passing": word("status", "passing")}
OK, BROKEN, FAIL = word("mark", "ok"), word("mark", "BROKEN"), word("mark", "FAIL")
WAITS = word("mark", "waits")
NOT_RUN = word("mark", "not run")
SOURCES = (word("source", "sim"), word("source", "real"))  # where a scenario ran: the simulator, or real processes


def report_text(report, lang: str = "en") -> str:
    """The report as `hwm-lab exercise check` prints it, in `lang`: the exercise's own fault first, then what
    its runs wait for, then each rule, scenario and the exploration; what another exercise broke comes before the
    rules when they all hold, after them when one of them (this exercise's own) is broken."""
    ex = report.exercise

    def say_in(text) -> str:
        return localize(text, lang)

    lines = [say_in(say("Exercise {number}: {title} ({module}) -- {status}", number=ex.number, title=ex.title,
                        module=ex.module, status=STATUS[report.status]))]
    fault = report.first_fault()
    if fault is not None:
        lines.extend(f"  {line}" for line in say_in(fault).splitlines())
    if report.does_not_import():  # nothing else could run: the two lines above say it all
        return "\n".join(lines)
    own = any(not r.ok for r in report.rules)
    notes = [waits_note(report), None if own else elsewhere_note(report)]
    for note in filter(None, notes):
        lines.extend(f"  {line}" for line in say_in(note).splitlines())
    for r in report.rules:
        lines.append(f"  [{say_in(OK if r.ok else BROKEN)}] " + say_in(say("{function}: {rule}", function=r.function,
                                                                          rule=r.rule)))
        if not r.ok:
            lines.extend(f"      {line}" for line in say_in(r.detail).splitlines())
    if own and elsewhere_note(report) is not None:
        lines.extend(f"  {line}" for line in say_in(elsewhere_note(report)).splitlines())
    for s in report.scenarios:
        lines.extend(_scenario_lines(s, say_in))
    if report.exploration is not None:
        lines.extend(_exploration_lines(report.exploration, say_in))
    if report.status == "not started":
        lines.append("  " + say_in(say("Start with the docstring of {module}; read {read}.", module=ex.module,
                                       read=ex.read)))
    return "\n".join(lines)


def waits_note(report) -> Text | None:
    """Which exercises the runs wait for, if any."""
    waits = sorted({n for s in report.scenarios for n in s.get("waits", ())} |
                   set((report.exploration or {}).get("waits", ())))
    if not waits:
        return None
    return say("Its scenarios and its exploration wait for {exercises} (not written yet, or a file that does not "
               "import): they run once those can.", exercises=_exercises(waits))


def elsewhere_note(report) -> Text | None:
    """The first failure that lands on another exercise of the student's, if any."""
    uses = [r.uses for r in report.rules if r.uses]
    uses += [s["explain"] for s in report.scenarios if s.get("status") == "elsewhere"]
    return uses[0] if uses else None


def _scenario_lines(s: dict, say_in) -> list[str]:
    if s["status"] == "not run":
        return [f"  [{say_in(NOT_RUN)}] " + say_in(say("scenario {scenario} ({truncation}): {why}",
                                                       scenario=s["scenario"], truncation=s["truncation"],
                                                       why=s["explain"]))]
    if s["status"] == "waits":
        return [f"  [{say_in(WAITS)}] " + say_in(say("scenario {scenario} ({truncation}): it needs {exercises}",
                                                     scenario=s["scenario"], truncation=s["truncation"],
                                                     exercises=_exercises(s["waits"])))]
    mark = (OK if s["passed"] else say("exercise {number}", number=s["elsewhere"]["exercise"])
            if s["status"] == "elsewhere" else FAIL)
    lines = [f"  [{say_in(mark)}] " + say_in(say(
        "scenario {scenario} ({truncation}, {source}, seed {seed}) -> {out}", scenario=s["scenario"],
        truncation=s["truncation"], source=word("source", s["source"]), seed=s["seed"], out=s["out"]))]
    if not s["passed"]:
        lines.extend(f"      {line}" for line in say_in(s["explain"]).splitlines())
    return lines


def _exploration_lines(found: dict, say_in) -> list[str]:
    status = found.get("status")
    mark = WAITS if status == "waits" else NOT_RUN if status == "not run" else \
        say("exercise {number}", number=found["elsewhere"]["exercise"]) if status == "elsewhere" else \
        FAIL if found["found"] else OK
    head, *rest = say_in(found["text"]).splitlines()
    return [f"  [{say_in(mark)}] {head}", *(f"      {line}" for line in rest)]


def _exercises(numbers):
    from lab.student.runs import exercises_text

    return exercises_text(numbers)
