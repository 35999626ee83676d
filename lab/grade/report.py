"""The grader's outputs besides the violations: grades.csv for an LMS, per-student feedback (HTML and Markdown),
Gradescope results.json files, and report.html, the class view with its pictures drawn as inline SVG.
Pure Python: the job hands in plain values."""

from __future__ import annotations

import csv
import html
import io
import json
import re
from dataclasses import dataclass, field

from lab.grade.graded import NODE_NAME
from lab.grade.rubric import RULES_ENTRY, CheckScore, Rubric, Score, fmt
from lab.grade.rules import BY_ID, GRADER_ENTRIES, RULES

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
    # rule's result ([rule, ok, detail with the input and values]), and the files to play (lab/grade/playable.py).
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


def write_all(storage, out: str, rubric: Rubric, results: list[StudentResult], common: list[dict],
              check_totals: dict[str, int], n_events: int, similar: str = "", similar_to: dict | None = None,
              trusted: bool = False, sandbox: str = "") -> None:
    from lab.grade.storage import join

    storage.write(join(out, "grades.csv"), as_bytes(grades_csv(rubric, results)))
    for r in (r for r in results if not r.duplicate):
        storage.write(join(out, FEEDBACK, f"{r.student}.md"), as_bytes(feedback_md(rubric, r)))
        storage.write(join(out, FEEDBACK, f"{r.student}.html"), as_bytes(feedback_html(rubric, r)))
        storage.write(join(out, "gradescope", r.student, "results.json"),
                      as_bytes(json.dumps(gradescope(rubric, r), indent=2) + "\n"))
    storage.write(join(out, "report.html"),
                  as_bytes(class_report(rubric, results, common, check_totals, n_events, similar, trusted,
                                        similar_to, sandbox)))


def as_bytes(text: str) -> bytes:
    """UTF-8, with what is not (a file name's undecodable bytes, as the file system gave them) written as escapes."""
    return text.encode("utf-8", "backslashreplace")


# ---- grades.csv ---------------------------------------------------------------------------------------------

def grades_csv(rubric: Rubric, results: list[StudentResult]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["student_id", *[f"exercise_{e.number}" for e in rubric.exercises], "total", "grading_status"])
    for r in sorted(results, key=lambda r: (r.student, r.duplicate, r.source)):
        if r.score:
            w.writerow([r.student, *[fmt(r.score.by_exercise[e.number]) for e in rubric.exercises],
                        fmt(r.score.total), r.status])
        else:
            w.writerow([r.student, *["0" for _ in rubric.exercises], "0", r.status])
    return buf.getvalue()


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


EXPLORED = re.compile(r"exercise (\d+): exploration found: (.*)", re.S)  # lab.grade.reexec's note
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


def _notes(r: StudentResult) -> list[str]:
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
    notes = _notes(r)
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


_CSS = """body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
body.wide{max-width:76rem}
table{border-collapse:collapse;margin:1rem 0;max-width:100%}td,th{border:1px solid #ccc;padding:.3rem .6rem;
text-align:left;overflow-wrap:anywhere}th{background:#f3f3f3;white-space:nowrap;overflow-wrap:normal}
pre{background:#f7f7f7;padding:.6rem;font-size:.8rem;white-space:pre-wrap;overflow-wrap:anywhere}
.unsafe{background:#ffd7d7;padding:.5rem;font-weight:bold}.here{background:#ffe9a8}.bad{color:#a40000}.ok{color:#176b00}.rule{font-style:italic}
.play{background:#eef5fb;border-left:4px solid #0072B2;padding:.4rem .7rem}svg{max-width:100%;height:auto}
summary{cursor:pointer}svg text{font-family:system-ui,sans-serif;font-size:11px}
#students{width:100%;table-layout:fixed;font-size:.85rem}#students td,#students th{padding:.2rem .35rem}
#students th{cursor:pointer;user-select:none}#students th[aria-sort=ascending]::after{content:" \\25B2"}
#students th[aria-sort=descending]::after{content:" \\25BC"}#students td.n,#students th.n{text-align:right}
#students td.cut{white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
#students tr.attention td:first-child{border-left:4px solid #c75000}.lost{color:#a40000}
.find{display:flex;gap:1rem;align-items:center;flex-wrap:wrap}.find input[type=search]{width:20rem}"""


def _page(title: str, body: str, wide: bool = False, script: str = "") -> str:
    opening = '<body class="wide">' if wide else "<body>"
    closing = f"<script>{script}</script>" if script else ""
    return (f"<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{html.escape(title)}"
            f"</title><style>{_CSS}</style></head>{opening}\n{body}\n{closing}</body></html>\n")


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
        return _page(f"Feedback {r.student}", "\n".join(parts))
    parts.append(f"<p>Total: <b>{fmt(r.score.total)} / {fmt(rubric.max_total)}</b></p>")
    parts.append("<table><tr><th>exercise</th><th>points</th><th></th></tr>" + "".join(
        f"<tr><td>{x.number}. {e(x.title)}</td><td>{fmt(r.score.by_exercise[x.number])} / {fmt(x.max_points)}"
        f"</td><td>{_row_note(r, x.number)}</td></tr>" for x in rubric.exercises) + "</table>")
    notes = _notes(r)
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
    return _page(f"Feedback {r.student}", "\n".join(parts))


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
    play (lab/grade/playable.py) is named in its failed tests' output and, by exercise, in `extra_data`."""
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
    notes = [plain(n) for n in _notes(r)] + [f"Exercise {m.group(1)}: the grader's search found a run that breaks "
                                              f"a rule (your feedback lists its steps)." for m in
                                              (EXPLORED.fullmatch(w) for w in r.warnings) if m]
    return {"score": r.score.total, "output": " ".join(notes) or "Graded.", "tests": tests,
            "extra_data": {"runs_to_play": {str(n): f"{FEEDBACK}/{p['file']}" for n, p in sorted(r.playable.items())}}}


# ---- report.html --------------------------------------------------------------------------------------------

def _histogram_svg(values: list[float], maximum: float, bins: int = 10) -> str:
    w, h, pad = 520, 200, 30
    counts = [0] * bins
    for v in values:
        counts[min(bins - 1, int(v / maximum * bins)) if maximum > 0 else 0] += 1
    top = max(counts) or 1
    bw = (w - 2 * pad) / bins
    bars = []
    for i, c in enumerate(counts):
        bh = (h - 2 * pad) * c / top
        x, y = pad + i * bw, h - pad - bh
        lo, hi = maximum * i / bins, maximum * (i + 1) / bins
        bars.append(f"<rect x=\"{x + 1:.1f}\" y=\"{y:.1f}\" width=\"{bw - 2:.1f}\" height=\"{bh:.1f}\" "
                    f"fill=\"#4a7ab5\"><title>{fmt(round(lo, 2))} to {fmt(round(hi, 2))}: {c} students</title></rect>")
        if c:
            bars.append(f"<text x=\"{x + bw / 2:.1f}\" y=\"{y - 3:.1f}\" text-anchor=\"middle\">{c}</text>")
    for i in range(bins + 1):  # every bin edge, from 0 to the rubric's maximum
        bars.append(f"<text class=\"axis\" x=\"{pad + i * bw:.1f}\" y=\"{h - pad + 14:.1f}\" text-anchor=\"middle\">"
                    f"{fmt(round(maximum * i / bins, 1))}</text>")
    return (f"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" role=\"img\" "
            f"aria-label=\"histogram of total scores\"><line x1=\"{pad}\" y1=\"{h - pad}\" x2=\"{w - pad}\" "
            f"y2=\"{h - pad}\" stroke=\"#333\"/>{''.join(bars)}</svg>")


CHAR_PX = 6.6  # width of a character at the pictures' 11 px font, generously

def _bars_svg(items: list[tuple[str, float]], label: str, colour: str = "#5a9e4b") -> str:
    """Horizontal bars of rates in [0, 1] (a pass rate in green, a failure rate in orange), each with its
    percentage."""
    row, bar = 22, 270
    left = 12 + max([CHAR_PX * len(name) for name, _ in items] or [0])  # every label whole, never cut
    w = left + bar + 60
    h = row * len(items) + 10
    parts = []
    for i, (name, rate) in enumerate(items):
        y = 5 + i * row
        bw = bar * rate
        parts.append(f"<text x=\"{left - 6}\" y=\"{y + 14}\" text-anchor=\"end\">{html.escape(name)}</text>"
                     f"<rect x=\"{left}\" y=\"{y + 3}\" width=\"{bw:.1f}\" height=\"{row - 8}\" fill=\"{colour}\"/>"
                     f"<text x=\"{left + bw + 4:.1f}\" y=\"{y + 14}\">{rate * 100:.0f}%</text>")
    return (f"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" role=\"img\" "
            f"aria-label=\"{html.escape(label)}\">{''.join(parts)}</svg>")


REEXECUTED = ("Every submission's code was run again by the grader in its sandbox, with seeds drawn per student; "
              "submitted runs count only where they were reproduced.")
TRUSTED = ("Graded from the submitted runs as sent (--trust-traces): nothing was re-executed, so a run made from "
           "other code than the student's would count.")


def shape(message: str) -> str:
    """A failure message with its numbers as N and digests as <digest> (as lab.grade.graded.common_messages)."""
    return re.sub(r"\d+(\.\d+)?", "N", re.sub(r"[0-9a-f]{16}", "<digest>", message))


def most_common(common: list[dict], results: list[StudentResult], limit: int = 15) -> list[dict]:
    """The checks' most common messages (from their violations) with the failures that are not violations of a
    trace: a probe's finding, a broken rule of an exercise; by students, then violations."""
    found: dict[tuple[str, str], list] = {}
    for r in results:
        failures = [(check, v.get("detail") or "") for (ex, check), v in r.first.items() if check in GRADER_ENTRIES]
        failures += [(RULES_ENTRY, f"{text}: {detail}") for rules in r.rule_results.values()
                     for text, ok, detail in rules if not ok]
        for check, message in failures:
            key = (check, re.sub(NODE_NAME, "X", shape(message)))
            found.setdefault(key, [set(), 0, shape(message)])
            found[key][0].add(r.student)
            found[key][1] += 1
            found[key][2] = min(found[key][2], shape(message))
    more = [{"check": check, "message": message, "students": len(who), "violations": n}
            for (check, _), (who, n, message) in found.items()]
    return sorted([*common, *more], key=lambda c: (-c["students"], -c["violations"], c["check"],
                                                   c["message"] or ""))[:limit]


def attention(r: StudentResult, similar_to: dict | None = None) -> list[str]:
    """Why a student's row needs the instructor's eyes, in a few words each: not gradable, a note (a run not used, an
    exercise that hit a limit), an exercise not started or not submitted, a similar submission."""
    if not r.score:
        return ["not gradable"]
    why = []
    notes = [n for n in _notes(r) if not re.fullmatch(r"exercise \d+: (not started|not submitted)", n)
             and not re.fullmatch(r"no runs for exercise \d+", n)]
    if notes:
        why.append(f"{len(notes)} note{'s' if len(notes) != 1 else ''}")
    for kind in ("not started", "not submitted"):
        numbers = sorted(n for n, s in r.statuses.items() if s == kind)
        if numbers:
            why.append(f"{kind}: ex. {', '.join(map(str, numbers))}")
    others = (similar_to or {}).get(r.student, [])
    if others:
        other, scope, similarity = others[0]
        why.append(f"similar to {other} ({similarity:.2f}{'' if scope == 'whole submission' else ', ' + scope})"
                   + (f" and {len(others) - 1} more" if len(others) > 1 else ""))
    return why


def _student_rows(rubric: Rubric, results: list[StudentResult], similar_to: dict | None) -> str:
    """The per-student table: needs attention first, then by student id; every cell sorts by its data-v."""
    e = html.escape
    numbers = [x.number for x in rubric.exercises]
    rows = []
    for r in sorted(results, key=lambda r: (not attention(r, similar_to), r.student, r.duplicate, r.source)):
        why = attention(r, similar_to)
        cells = [f"<td class=\"cut\" title=\"{e(r.student)} ({e(r.source)})\" data-v=\"{e(r.student)}\">"
                 f"{e(r.student)}</td>"]
        total = r.score.total if r.score else -1
        cells.append(f"<td class=\"n\" data-v=\"{total}\">{fmt(r.score.total) if r.score else '-'}</td>")
        for x in rubric.exercises:
            got = r.score.by_exercise[x.number] if r.score else None
            status = r.statuses.get(x.number, "")
            shown = "-" if got is None else fmt(got)
            lost = got is not None and got < x.max_points
            title = f"exercise {x.number}: {shown} of {fmt(x.max_points)}" + (f" ({status})" if status and
                                                                                status != "ok" else "")
            cells.append(f"<td class=\"n{' lost' if lost else ''}\" title=\"{e(title)}\" "
                         f"data-v=\"{-1 if got is None else got}\">{shown}</td>")
        cells.append(f"<td class=\"cut\" title=\"{e(r.status)}\" data-v=\"{e(r.status)}\">"
                     f"{e('ok' if r.score else r.status)}</td>")
        cells.append(f"<td data-v=\"{e('; '.join(why))}\">{e('; '.join(why))}</td>")
        links = [] if r.duplicate else [f"<a href=\"{FEEDBACK}/{e(r.student)}.html\">feedback</a>"]
        links += [f"<a href=\"{FEEDBACK}/{e(p['file'])}\" title=\"exercise {n}: the failing run, to play\">▶{n}</a>"
                  for n, p in sorted(r.playable.items())]
        cells.append(f"<td data-v=\"{len(links)}\">{' '.join(links)}</td>")
        marks = ' class="attention" data-attention="1"' if why else ""
        rows.append(f"<tr{marks}>{''.join(cells)}</tr>")
    heads = ["<th style=\"width:9rem\" title=\"the student id (the entry of SUBMISSIONS in its tooltip)\">student</th>",
             "<th class=\"n\" style=\"width:3.6rem\" title=\"total points\">total</th>",
             *(f"<th class=\"n\" style=\"width:2.9rem\" title=\"exercise {x.number}: {e(x.title)} (of "
               f"{fmt(x.max_points)})\">ex. {x.number}</th>" for x in rubric.exercises),
             "<th style=\"width:8rem\" title=\"grading_status of grades.csv\">status</th>",
             "<th title=\"why the row needs attention\">needs attention</th>",
             "<th style=\"width:8.5rem\" title=\"the student's feedback, and each exercise's failing run to play\">"
             "links</th>"]
    assert len(heads) == 5 + len(numbers)
    return (f"<table id=\"students\"><thead><tr>{''.join(heads)}</tr></thead><tbody>{''.join(rows)}</tbody></table>")


# Sorting (click a header; again: the other way) and filtering (words, the rows that need attention), in the page:
# no server, no network.
STUDENTS_JS = """(() => {
const table = document.getElementById('students'); if (!table) return;
const body = table.tBodies[0], rows = [...body.rows], find = document.getElementById('find'),
      only = document.getElementById('attention'), shown = document.getElementById('shown');
function value(row, i) { const v = row.cells[i].dataset.v; const n = Number(v); return v !== '' && !isNaN(n) ? n : v; }
[...table.tHead.rows[0].cells].forEach((th, i) => th.addEventListener('click', () => {
  const up = th.getAttribute('aria-sort') !== 'ascending';
  [...table.tHead.rows[0].cells].forEach((h) => h.removeAttribute('aria-sort'));
  th.setAttribute('aria-sort', up ? 'ascending' : 'descending');
  rows.sort((a, b) => { const x = value(a, i), y = value(b, i);
    const c = typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y));
    return up ? c : -c; });
  rows.forEach((r) => body.appendChild(r));
}));
function filter() {
  const words = find.value.toLowerCase().split(/\\s+/).filter(Boolean); let n = 0;
  rows.forEach((r) => { const text = r.textContent.toLowerCase() + ' ' + r.cells[0].title.toLowerCase();
    const ok = words.every((w) => text.includes(w)) && (!only.checked || r.dataset.attention === '1');
    r.hidden = !ok; n += ok ? 1 : 0; });
  shown.textContent = n + ' of ' + rows.length + ' rows shown';
}
find.addEventListener('input', filter); only.addEventListener('change', filter); filter();
})();"""


def rule_rates(results: list[StudentResult]) -> list[dict]:
    """Per rule (a check of the traces, a probe, the exercises' rules): how many graded students lost points on it
    (in any exercise), of how many graded, and its runs graded, failed and withheld (runs that did not advance)."""
    graded = [r for r in results if r.score]
    out = []
    for rule in (*RULES, *(BY_ID[c] for c in GRADER_ENTRIES)):
        entries = [(r, cs) for r in graded for cs in r.score.checks if cs.check == rule.check]
        if not entries:
            continue
        failing = {r.student for r, cs in entries if cs.failed and (cs.points < cs.max_points or cs.progress)}
        runs = sum(cs.runs for _, cs in entries if cs.check not in GRADER_ENTRIES)
        out.append({"check": rule.check, "number": rule.number, "students": len(failing),
                    "graded": len({r.student for r, _ in entries}), "runs": runs,
                    "failed_runs": sum(len(cs.failed_runs) for _, cs in entries),
                    "withheld": sum(len(cs.idle_runs) for _, cs in entries if cs.check not in GRADER_ENTRIES)})
    return out


def class_report(rubric: Rubric, results: list[StudentResult], common: list[dict], check_totals: dict[str, int],
                 n_events: int, similar: str = "", trusted: bool = False, similar_to: dict | None = None,
                 sandbox: str = "") -> str:
    """The class view: what needs the instructor first (the entries not graded, then every student in one table,
    sortable and filterable in the page), then the class's pictures. `similar` is the section on similar
    submissions (lab/grade/similarity.py), as HTML, and `similar_to` its pairs by student; `trusted`: graded from
    the submitted runs as sent (--trust-traces), nothing re-executed; `sandbox`: what the grader proved of its
    sandbox (lab/grade/proof.py)."""
    e = html.escape
    graded = [r for r in results if r.score]
    bad = [r for r in results if not r.score]
    totals = [r.score.total for r in graded]
    needing = [r for r in results if attention(r, similar_to)]
    parts = [f"<h1>HWM Lab: class report</h1>",
             f"<p>{len(results)} entries of the submissions folder: {len(graded)} students graded, {len(bad)} not "
             f"gradable; {n_events:,} events checked. Mean total {sum(totals) / len(totals) if totals else 0:.2f} of "
             f"{fmt(rubric.max_total)}. {len(needing)} rows need attention.</p>",
             f"<p class=\"mode\">{e(TRUSTED if trusted else REEXECUTED)}</p>",
             *([f"<p class=\"sandbox{' unsafe' if sandbox.startswith('UNSAFE') else ''}\">{e(sandbox)}</p>"]
               if sandbox else [])]
    if bad:
        parts.append(f"<h2>Not gradable ({len(bad)})</h2><p>Each entry of the submissions folder that could not be "
                     "graded, with the reason: a row of grades.csv each, never in an LMS import file.</p>"
                     "<table><tr><th>entry</th><th>student</th><th>why</th></tr>" + "".join(
                         f"<tr><td>{e(r.source)}</td><td>{e(r.student)}</td><td>{e(r.status)}</td></tr>"
                         for r in bad) + "</table>")
    parts.append("<h2>Students</h2><p>Rows that need attention come first (not gradable; a note, such as a run that "
                 "was not used or an exercise that hit a limit; an exercise not started or not submitted; a similar "
                 "submission). Click a header to sort; type to filter.</p>"
                 "<p class=\"find\"><input type=\"search\" id=\"find\" placeholder=\"filter: a student, a status, "
                 "a word\" aria-label=\"filter the rows\"><label><input type=\"checkbox\" id=\"attention\"> needs "
                 "attention only</label><span id=\"shown\"></span></p>")
    parts.append(_student_rows(rubric, results, similar_to))
    parts += ["<h2>Scores</h2>", _histogram_svg(totals, rubric.max_total)]

    rates = rule_rates(results)
    parts.append("<h2>Failure rate per rule</h2><p>Share of the graded students who lost points on the rule, in any "
                 "exercise (a check of the runs, a probe of the grader's, or an exercise's rules; for "
                 "<code>progress</code>, runs that did not advance).</p>")
    parts.append(_bars_svg([(f"{c['number'] or ''}{'. ' if c['number'] else ''}{c['check']}",
                             c["students"] / c["graded"] if c["graded"] else 0.0) for c in rates],
                           "failure rate per rule", colour="#c75000"))
    parts.append("<table><tr><th>rule</th><th>students failing</th><th>of graded</th><th>failure rate</th>"
                 "<th>runs graded</th><th>runs failed</th><th>runs withheld</th><th>violations</th></tr>" + "".join(
                     f"<tr><td>{e(c['check'])}</td><td>{c['students']}</td><td>{c['graded']}</td>"
                     f"<td>{100 * c['students'] / c['graded'] if c['graded'] else 0:.1f}%</td><td>{c['runs']}</td>"
                     f"<td>{c['failed_runs']}</td><td>{c['withheld']}</td><td>{check_totals.get(c['check'], '')}"
                     f"</td></tr>" for c in rates) + "</table>")

    ex_rows = []
    for x in rubric.exercises:
        full = sum(1 for r in graded if r.score.by_exercise[x.number] >= x.max_points)
        mean = sum(r.score.by_exercise[x.number] for r in graded) / len(graded) if graded else 0
        ex_rows.append((f"{x.number}. {x.title}", full / len(graded) if graded else 0, mean, x.max_points))
    parts.append("<h2>Pass rate per exercise</h2><p>Share of graded students with full marks on the exercise.</p>")
    parts.append(_bars_svg([(n, rate) for n, rate, *_ in ex_rows], "pass rate per exercise"))
    parts.append("<table><tr><th>exercise</th><th>full marks</th><th>mean points</th></tr>" + "".join(
        f"<tr><td>{e(n)}</td><td>{rate * 100:.1f}%</td><td>{mean:.2f} / {fmt(mx)}</td></tr>"
        for n, rate, mean, mx in ex_rows) + "</table>")

    common = most_common(common, results)
    parts.append("<h2>Most common failure messages</h2><p>Every failure: the checks' violations, the grader's "
                 "probes and the exercises' rules. Numbers are shown as N, digests as &lt;digest&gt; and node names "
                 "alike, so the same mistake in different runs counts once per student; the bars are the share of "
                 "graded students.</p>")
    if common:
        parts.append(_bars_svg([(f"{c['check']} #{i + 1}", c["students"] / len(graded) if graded else 0.0)
                                for i, c in enumerate(common[:10])], "share of graded students per failure message",
                               colour="#c75000"))
        parts.append("<table><tr><th>#</th><th>check</th><th>message</th><th>students</th><th>violations</th></tr>"
                     + "".join(f"<tr><td>{i + 1}</td><td>{e(c['check'])}</td><td>{e(c['message'] or '')}</td>"
                               f"<td>{c['students']}</td><td>{c['violations']}</td></tr>"
                               for i, c in enumerate(common)) + "</table>")
    else:
        parts.append("<p>No violations.</p>")

    if similar:
        parts.append(similar)
    return _page("HWM Lab class report", "\n".join(parts), wide=True, script=STUDENTS_JS)
