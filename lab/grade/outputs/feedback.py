"""What each student reads: the feedback page (Markdown and HTML) and Gradescope's results.json, written from a
StudentResult (a submission's score, what the re-execution found, its runs to play). Pure Python: the job hands in
plain values; lab/grade/outputs/report.py writes them with the class's grades.csv and report.html."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field

from lab.grade.inputs.rubric import RULES_ENTRY, CheckScore, Rubric, Score, fmt
from lab.grade.inputs.rubric_entries import BY_ID, GRADER_ENTRIES
from lab.grade.outputs.html_page import page

FEEDBACK = "feedback"  # the folder of each student's feedback and runs to play, in --out


@dataclass
class StudentResult:
    student: str
    source: str
    status: str  # "ok" or why the submission could not be graded
    score: Score | None
    runs: list[tuple[str, int, str | None]]
    warnings: list[str] = field(default_factory=list)
    first: dict[tuple[int, str], dict] = field(default_factory=dict)  # (exercise, check) -> first violation
    # What the re-execution found, for the feedback: each exercise's status ("ok", "not started", ...), each
    # rule's result ([rule, ok, detail with the input and values]), and the files to play (lab/grade/outputs/playable.py).
    statuses: dict[int, str] = field(default_factory=dict)
    rule_results: dict[int, list] = field(default_factory=dict)
    playable: dict[int, dict] = field(default_factory=dict)
    duplicate: bool = False  # another submission of the same student's is graded: a row of grades.csv, no feedback


def found_by_reexecution(results: list[StudentResult], outcome) -> None:
    """What the re-execution found that the feedback says: each exercise's status, each rule's result."""
    by_student = {r.student: r for r in results if not r.duplicate}
    for (student, number), status in outcome.status.items():
        r = by_student.get(student)
        if r is not None:
            r.statuses[number] = status
            r.rule_results[number] = outcome.rule_results.get((student, number), [])


# ---- feedback -----------------------------------------------------------------------------------------------

def _failed(r: StudentResult):
    """The failed entries, each exercise's progress checks first: they say why its other checks earned less."""
    for cs in sorted((c for c in (r.score.checks if r.score else []) if c.failed), key=lambda c: not c.progress):
        yield cs


def _points(cs: CheckScore) -> str:
    """", 3 / 4 points" beside an entry's title; nothing for a progress check that has no points of its own."""
    return f", {fmt(cs.points)} / {fmt(cs.max_points)} points" if cs.max_points or not cs.progress else ""


def _how(cs: CheckScore) -> str:
    """How a failed (exercise, check) failed, in one sentence."""
    if cs.check == RULES_ENTRY:
        if cs.rules is None:
            return ("Your submission reports no rule results (submission format version 1): these points follow "
                    "the share of the exercise's other points that your traces earned.")
        ok, total = cs.rules
        if not total:
            return f"No rule of exercise {cs.exercise} was checked on your code."
        broken = total - ok
        return (f"{ok} of {total} rules held on your code; the {'one' if broken == 1 else broken} broken, with the "
                f"input that breaks {'it' if broken == 1 else 'each'} and what your function answered:")
    if cs.check in GRADER_ENTRIES:  # a probe of the grader's
        return ("The grader's own probe of your function found a case that breaks this rule: the smallest one is "
                "below." if cs.violations else
                f"The grader's own probe found nothing, but these points follow the share of the exercise's runs "
                f"that advanced: {len(cs.idle_runs)} of {cs.runs} did not ({', '.join(cs.idle_runs)}; see "
                f"`progress`)." if cs.idle_runs else
                "Not probed (graded without re-execution): these points follow the share of the exercise's other "
                "points that your traces earned.")
    if cs.progress:
        return (f"Not met in {len(cs.failed_runs)} of {cs.runs} runs ({', '.join(cs.failed_runs)}): in "
                f"{'that run' if len(cs.failed_runs) == 1 else 'those runs'} the exercise's other checks earn "
                f"nothing, since a run that never advances breaks no safety rule and proves nothing by it.")
    broken = (f"Broken in {len(cs.failed_runs)} of {cs.runs} runs ({', '.join(cs.failed_runs)}), "
              f"{cs.violations} violation{'s' if cs.violations != 1 else ''} in all." if cs.failed_runs else "")
    if cs.idle_runs:
        idle = (f"{len(cs.idle_runs)} {'more ' if cs.failed_runs else ''}of {cs.runs} runs "
                f"({', '.join(cs.idle_runs)}) earn nothing here: the cluster did not get as far as the scenario waits "
                f"for (see `progress`).")
        return f"{broken} {idle}" if broken else f"Nothing broken, but {idle}"
    return broken


def _title(rubric: Rubric, number: int) -> str:
    return next(e.title for e in rubric.exercises if e.number == number)


def _where(v: dict) -> str:
    """Where a first violation is, without a None for what it does not have (a run-wide one has no node)."""
    parts = [f"run {v['run']}"]
    if v.get("node") is not None:
        parts.append(f"node {v['node']}")
    if v.get("time") is not None:
        parts.append(f"t={v['time']:.2f}")
    return ", ".join(parts)


def _excerpt_lines(v: dict, width: int = 220) -> list[str]:
    out = []
    for seq, line, here in v.get("excerpt", []):
        text = line if len(line) <= width else line[:width] + " ..."
        out.append(f"{'>>' if here else '  '} {text}")
    return out


EXPLORED = re.compile(r"exercise (\d+): exploration found: (.*)", re.S)  # lab.grade.spark.reexec's note
NOT_RUN = {"not started": "Not started: the functions of exercise {n} still raise NotImplementedError, so the "
                          "grader could run nothing of it. Start with the docstring of {module}; `hwm-lab exercise "
                          "check {n}` says what each of its rules expects.",
           "not submitted": "Not submitted: your submission holds no {module}, so the grader could run nothing of "
                            "exercise {n}."}


NO_RUN = ("No run of this exercise failed, so there is no run to watch: the points were lost on the cases below, "
          "each an input that breaks a rule.")


def explorations(r: StudentResult) -> dict[int, str]:
    """exercise -> the explorer's counterexample in words, from the notes the re-execution left."""
    found = {}
    for note in r.warnings:
        m = EXPLORED.fullmatch(note)
        if m:
            found[int(m.group(1))] = m.group(2)
    return found


def story(text: str) -> tuple[list[str], list[str], list[str]]:
    """An explorer's explanation (lab.explore.explain) as what comes before its steps, its steps, what follows."""
    head, steps, tail = [], [], []
    for line in text.splitlines():
        m = re.match(r"\s+\d+\. (.*)", line)
        if m and not tail:
            steps.append(m.group(1))
        elif line.strip():
            (tail if steps else head).append(line.strip())
    return head, steps, tail


def notes_of(r: StudentResult) -> list[str]:
    """The notes beside the score (as the grader recorded them): an exercise that was not started says so; the
    explorer's findings go to their exercise's section."""
    notes = []
    for note in [*r.score.notes, *r.warnings]:
        m = re.fullmatch(r"no runs for exercise (\d+)", note)
        status = r.statuses.get(int(m.group(1))) if m else None
        if EXPLORED.fullmatch(note):
            continue
        notes.append(f"exercise {m.group(1)}: {status}" if status in NOT_RUN else note)
    return notes


# The grader's notes as its records keep them -> the same in plain words, for the student (feedback, Gradescope).
PLAIN: tuple[tuple[re.Pattern, str], ...] = tuple((re.compile(a, re.S), b) for a, b in (
    (r"stale: run (\S+) \(exercise (\d+)\) counts for nothing: (.*)",
     r"Your run \1 (exercise \2) was not graded: \3."),
    (r"incomplete: run (\S+) \(exercise (\d+)\) counts for nothing: (.*)",
     r"Your run \1 (exercise \2) was not graded: it is incomplete (\3), and a missing file could hide a broken rule."),
    (r"not reproducible: run (\S+) \(exercise (\d+)\) counts for nothing: re-simulated from its own seed with (.*), "
     r"the files it was made from, its events differ(.*)",
     r"Your run \1 (exercise \2) was not graded: the grader ran it again from its own seed with \3, the files it "
     r"was made from, and got other events\4, so it was not made from those files as they are."),
    (r"not reproducible: run (\S+) \(exercise (\d+)\) counts for nothing: the grader could not simulate it again "
     r"\((.*)\)", r"Your run \1 (exercise \2) was not graded: the grader could not run it again (\3)."),
    (r"run (\S+) \(exercise (\d+)\) counts for nothing: (.*)", r"Your run \1 (exercise \2) was not graded: \3."),
    (r"no runs for exercise (\d+)", r"Exercise \1 has no run the grader could grade, so it earns nothing."),
    (r"exercise (\d+): not started", r"Exercise \1 is not started: its functions still raise NotImplementedError."),
    (r"exercise (\d+): not submitted", r"Exercise \1 was not submitted: your submission holds no file for it."),
    (r"exercise (\d+): timeout; none of its runs count",
     r"Exercise \1 ran past a time limit of the grader (a call of your function, its CPU time or its wall clock), "
     r"so none of its runs count."),
    (r"exercise (\d+): memory; none of its runs count",
     r"Exercise \1 ran out of the memory the grader allows, so none of its runs count."),
    (r"exercise (\d+): processes; none of its runs count",
     r"Exercise \1 started more processes than the grader allows, so none of its runs count."),
    (r"exercise (\d+): crashed: (.*); none of its runs count",
     r"Exercise \1 stopped the grader's runs: \2. None of its runs count."),
    (r"(\S+) was also submitted by (\S+) and is ignored \(older or unreadable\)",
     r"You also handed in \1: it was not graded (this one is newer, or \1 could not be read)."),
    (r"(\S+) line (\d+)(.*) \(torn last line, skipped\)",
     r"The last line of \1 (line \2) was cut off, as when a node is killed while writing it: it was skipped."),
))


def plain(note: str) -> str:
    """A note of the grader's in plain words (PLAIN), or as it is when it already is."""
    for pattern, words in PLAIN:
        if pattern.fullmatch(note):
            said = pattern.sub(words, note)
            return said[0].upper() + said[1:]
    return note[0].upper() + note[1:] if note else note


def _lost(rubric: Rubric, r: StudentResult) -> list:
    """The exercises that lost points, in order."""
    return [x for x in rubric.exercises if r.score.by_exercise[x.number] < x.max_points]


def _ran(r: StudentResult, number: int) -> bool:
    """Whether the exercise had runs graded (else the notes say why none)."""
    return any(cs.runs for cs in r.score.checks if cs.exercise == number)


def _module(number: int) -> str:
    from lab.student.checks import exercise

    return exercise(number).module


def _play_words(p: dict) -> str:
    if p["kind"] == "counterexample":
        return (f"the explorer's counterexample, shrunk, plays in any browser with no setup ({_size(p)}); its last "
                f"step, where the rule breaks, is marked red")
    return (f"run {p['run']} plays in any browser with no setup ({_size(p)}); the step in which a rule first broke "
            f"is marked red on its timeline")


def _size(p: dict) -> str:
    shown = (f"; {p['shown']:,} of its {p['events']:,} events shown, the rest summarised" if p["shown"] < p["events"]
             else "")
    return f"{p['bytes'] / 1024:,.0f} KB{shown}"


def feedback_md(rubric: Rubric, r: StudentResult) -> str:
    lines = [f"# HWM Lab feedback: {r.student}", ""]
    if not r.score:
        lines += [f"Your submission ({r.source}) could not be graded: **{r.status}**.", "",
                  "Nothing was graded, so every exercise scores 0. Fix the submission and submit again "
                  "(`hwm-lab submit` packs it correctly).", ""]
        return "\n".join(lines)
    lines += [f"Total: **{fmt(r.score.total)} / {fmt(rubric.max_total)}**", "",
              "| exercise | points |", "|---|---|"]
    for e in rubric.exercises:
        lines.append(f"| {e.number}. {e.title} | {fmt(r.score.by_exercise[e.number])} / {fmt(e.max_points)} |")
    lines.append("")
    notes = notes_of(r)
    if notes:
        lines += ["## Notes", "", *(f"- {plain(n)}" for n in notes), ""]
    lost = _lost(rubric, r)
    if not lost:
        lines += ["", "Every check passed on every run. Well done.", ""]
        return "\n".join(lines)
    lines += ["", "## What failed", ""]
    found = explorations(r)
    for x in lost:
        lines += [f"### Exercise {x.number}: {x.title}, {fmt(r.score.by_exercise[x.number])} / "
                  f"{fmt(x.max_points)}", ""]
        status = r.statuses.get(x.number)
        if status in NOT_RUN:
            lines += [NOT_RUN[status].format(n=x.number, module=f"`{_module(x.number)}`"), ""]
            continue
        if x.number in r.playable:
            p = r.playable[x.number]
            lines += [f"Watch it: [{p['file']}]({p['file']}), {_play_words(p)}.", ""]
        elif _ran(r, x.number):
            lines += [NO_RUN, ""]
        for cs in (c for c in _failed(r) if c.exercise == x.number):
            lines += _check_md(r, cs)
        if x.number in found:
            head, steps, tail = story(found[x.number])
            lines += ["#### What the explorer found", "", *head, "",
                      *[f"{k}. {s}" for k, s in enumerate(steps, start=1)], "", *tail, ""]
    return "\n".join(lines)


def _check_md(r: StudentResult, cs: CheckScore) -> list[str]:
    rule = BY_ID[cs.check]
    lines = [f"#### {rule.title} (`{cs.check}`){_points(cs)}", "",
             f"The rule: {rule.rule}", "", _how(cs), ""]
    if cs.check == RULES_ENTRY:
        lines += [f"- {text}: {detail}" for text, ok, detail in r.rule_results.get(cs.exercise, []) if not ok] + [""]
    v = r.first.get((cs.exercise, cs.check))
    if v and cs.check in GRADER_ENTRIES:  # a probe's case, not a run's
        lines += [f"The case: {v.get('detail') or ''}", ""]
    elif v:
        lines += [f"First violation ({_where(v)}): {v.get('detail') or ''}", ""]
        excerpt = _excerpt_lines(v)
        if excerpt:
            lines += [f"The trace around it (events of {v.get('node')}; `>>` marks the event):", "", "```",
                      *excerpt, "```", ""]
    return lines


def marked(text: str) -> str:
    """A sentence as HTML: escaped, and its `code` spans as <code>, never as backticks."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))


def feedback_html(rubric: Rubric, r: StudentResult) -> str:
    e = html.escape
    parts = [f"<h1>HWM Lab feedback: {e(r.student)}</h1>"]
    if not r.score:
        parts.append(f"<p class=\"bad\">Your submission ({e(r.source)}) could not be graded: <b>{e(r.status)}</b>."
                     "</p><p>Nothing was graded, so every exercise scores 0. Fix the submission and submit again "
                     "(<code>hwm-lab submit</code> packs it correctly).</p>")
        return page(f"Feedback {r.student}", "\n".join(parts))
    parts.append(f"<p>Total: <b>{fmt(r.score.total)} / {fmt(rubric.max_total)}</b></p>")
    parts.append("<table><tr><th>exercise</th><th>points</th><th></th></tr>" + "".join(
        f"<tr><td>{x.number}. {e(x.title)}</td><td>{fmt(r.score.by_exercise[x.number])} / {fmt(x.max_points)}"
        f"</td><td>{_row_note(r, x.number)}</td></tr>" for x in rubric.exercises) + "</table>")
    notes = notes_of(r)
    if notes:
        parts.append("<h2>Notes</h2><ul class=\"notes\">" + "".join(f"<li>{marked(plain(n))}</li>" for n in notes)
                     + "</ul>")
    lost = _lost(rubric, r)
    if not lost:
        parts.append("<p class=\"ok\">Every check passed on every run. Well done.</p>")
    else:
        parts.append("<h2>What failed</h2>")
    found = explorations(r)
    for x in lost:
        parts.append(f"<h3 id=\"ex{x.number}\">Exercise {x.number}: {e(x.title)}, "
                     f"{fmt(r.score.by_exercise[x.number])} / {fmt(x.max_points)}</h3>")
        status = r.statuses.get(x.number)
        if status in NOT_RUN:
            said = NOT_RUN[status].format(n=x.number, module=f"`{_module(x.number)}`")
            parts.append(f"<p class=\"bad\">{marked(said)}</p>")
            continue
        if x.number in r.playable:
            p = r.playable[x.number]
            parts.append(f"<p class=\"play\">▶ <a href=\"{e(p['file'])}\">Watch it</a>: {e(_play_words(p))}.</p>")
        elif _ran(r, x.number):
            parts.append(f"<p>{marked(NO_RUN)}</p>")
        parts += [_check_html(r, cs) for cs in _failed(r) if cs.exercise == x.number]
        if x.number in found:
            head, steps, tail = story(found[x.number])
            parts.append("<h4>What the explorer found</h4>" + "".join(f"<p>{marked(h)}</p>" for h in head)
                         + "<ol>" + "".join(f"<li>{marked(s)}</li>" for s in steps) + "</ol>"
                         + "".join(f"<p>{marked(t)}</p>" for t in tail))
    return page(f"Feedback {r.student}", "\n".join(parts))


def _row_note(r: StudentResult, number: int) -> str:
    if r.statuses.get(number) in NOT_RUN:
        return html.escape(r.statuses[number])
    if number in r.playable:
        return f"<a href=\"{html.escape(r.playable[number]['file'])}\">▶ watch the failing run</a>"
    return ""


def _check_html(r: StudentResult, cs: CheckScore) -> str:
    e = html.escape
    rule = BY_ID[cs.check]
    parts = [f"<h4>{e(rule.title)} (<code>{cs.check}</code>){_points(cs)}</h4>",
             f"<p class=\"rule\">The rule: {marked(rule.rule)}</p>", f"<p>{marked(_how(cs))}</p>"]
    if cs.check == RULES_ENTRY:
        broken = [(text, detail) for text, ok, detail in r.rule_results.get(cs.exercise, []) if not ok]
        if broken:
            parts.append("<ul>" + "".join(f"<li><b>{marked(t)}</b><br>{marked(d)}</li>" for t, d in broken)
                         + "</ul>")
    v = r.first.get((cs.exercise, cs.check))
    if v and cs.check in GRADER_ENTRIES:  # a probe's case, not a run's
        parts.append(f"<p>The case: <b>{e(v['detail'] or '')}</b></p>")
    elif v:
        parts.append(f"<p>First violation ({e(_where(v))}): <b>{e(v['detail'] or '')}</b></p>")
        if v.get("excerpt"):
            rows = []
            for seq, line, here in v["excerpt"]:
                text = line if len(line) <= 220 else line[:220] + " ..."
                rows.append(f"<span class=\"here\">{e(text)}</span>" if here else e(text))
            parts.append(f"<p>The trace around it (events of {e(str(v.get('node')))}, the event highlighted):"
                         f"</p><pre>{chr(10).join(rows)}</pre>")
    return "\n".join(parts)


# ---- Gradescope ---------------------------------------------------------------------------------------------

def gradescope(rubric: Rubric, r: StudentResult) -> dict:
    """Gradescope's autograder results.json: score, and one test per (exercise, check); each exercise's run to
    play (lab/grade/outputs/playable.py) is named in its failed tests' output and, by exercise, in `extra_data`."""
    if not r.score:
        return {"score": 0, "output": f"Not graded: {r.status}",
                "tests": [{"name": "Submission can be graded", "score": 0, "max_score": 0, "status": "failed",
                           "output": r.status, "visibility": "visible"}]}
    tests = []
    for cs in r.score.checks:
        rule = BY_ID[cs.check]
        passed = not cs.failed and cs.runs > 0
        status = r.statuses.get(cs.exercise)
        if passed:
            output = (f"Passed on {cs.runs} run{'s' if cs.runs != 1 else ''}. {rule.rule}"
                      if cs.check not in GRADER_ENTRIES
                      else f"{_how(cs) if cs.rules is None and cs.check == RULES_ENTRY else 'Every rule ok.'} "
                           f"{rule.rule}")
        elif status in NOT_RUN:
            output = NOT_RUN[status].format(n=cs.exercise, module=_module(cs.exercise))
        elif cs.runs == 0:
            output = f"No runs of exercise {cs.exercise} to grade. {rule.rule}"
        else:
            v = r.first.get((cs.exercise, cs.check))
            output = (f"{_how(cs)}" + "".join(f"\n- {text}: {detail}" for text, ok, detail
                                              in r.rule_results.get(cs.exercise, []) if not ok and
                                              cs.check == RULES_ENTRY)
                      + f"\nThe rule: {rule.rule}"
                      + (f"\nFirst violation ({_where(v)}): {v.get('detail') or ''}" if v else "")
                      + (f"\nWatch the failing run in any browser: {FEEDBACK}/{r.playable[cs.exercise]['file']}"
                         if cs.exercise in r.playable else ""))
        tests.append({"name": f"Exercise {cs.exercise} ({_title(rubric, cs.exercise)}): {rule.title} [{cs.check}]",
                      "score": cs.points, "max_score": cs.max_points, "status": "passed" if passed else "failed",
                      "output": output, "visibility": "visible"})
    notes = [plain(n) for n in notes_of(r)] + [f"Exercise {m.group(1)}: the grader's search found a run that breaks "
                                              f"a rule (your feedback lists its steps)." for m in
                                              (EXPLORED.fullmatch(w) for w in r.warnings) if m]
    return {"score": r.score.total, "output": " ".join(notes) or "Graded.", "tests": tests,
            "extra_data": {"runs_to_play": {str(n): f"{FEEDBACK}/{p['file']}" for n, p in sorted(r.playable.items())}}}
