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


def found_by_reexecution(results: list[StudentResult], outcome) -> None:
    """What the re-execution found that the feedback says: each exercise's status, each rule's result."""
    by_student = {r.student: r for r in results}
    for (student, number), status in outcome.status.items():
        r = by_student.get(student)
        if r is not None:
            r.statuses[number] = status
            r.rule_results[number] = outcome.rule_results.get((student, number), [])


def write_all(storage, out: str, rubric: Rubric, results: list[StudentResult], common: list[dict],
              check_totals: dict[str, int], n_events: int, similar: str = "", trusted: bool = False) -> None:
    from lab.grade.storage import join

    storage.write(join(out, "grades.csv"), as_bytes(grades_csv(rubric, results)))
    for r in results:
        storage.write(join(out, FEEDBACK, f"{r.student}.md"), as_bytes(feedback_md(rubric, r)))
        storage.write(join(out, FEEDBACK, f"{r.student}.html"), as_bytes(feedback_html(rubric, r)))
        storage.write(join(out, "gradescope", r.student, "results.json"),
                      as_bytes(json.dumps(gradescope(rubric, r), indent=2) + "\n"))
    storage.write(join(out, "report.html"),
                  as_bytes(class_report(rubric, results, common, check_totals, n_events, similar, trusted)))


def as_bytes(text: str) -> bytes:
    """UTF-8, with what is not (a file name's undecodable bytes, as the file system gave them) written as escapes."""
    return text.encode("utf-8", "backslashreplace")


# ---- grades.csv ---------------------------------------------------------------------------------------------

def grades_csv(rubric: Rubric, results: list[StudentResult]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["student_id", *[f"exercise_{e.number}" for e in rubric.exercises], "total", "grading_status"])
    for r in sorted(results, key=lambda r: r.student):
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
    """The notes beside the score: an exercise that was not started says so; the explorer's findings go to
    their exercise's section."""
    notes = []
    for note in [*r.score.notes, *r.warnings]:
        m = re.fullmatch(r"no runs for exercise (\d+)", note)
        status = r.statuses.get(int(m.group(1))) if m else None
        if EXPLORED.fullmatch(note):
            continue
        notes.append(f"exercise {m.group(1)}: {status}" if status in NOT_RUN else note)
    return notes


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
    for note in _notes(r):
        lines.append(f"- note: {note}")
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
table{border-collapse:collapse;margin:1rem 0;max-width:100%}td,th{border:1px solid #ccc;padding:.3rem .6rem;
text-align:left;overflow-wrap:anywhere}th{background:#f3f3f3}
pre{background:#f7f7f7;padding:.6rem;font-size:.8rem;white-space:pre-wrap;overflow-wrap:anywhere}
.here{background:#ffe9a8}.bad{color:#a40000}.ok{color:#176b00}.rule{font-style:italic}
.play{background:#eef5fb;border-left:4px solid #0072B2;padding:.4rem .7rem}svg{max-width:100%;height:auto}
summary{cursor:pointer}svg text{font-family:system-ui,sans-serif;font-size:11px}"""


def _page(title: str, body: str) -> str:
    return (f"<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{html.escape(title)}"
            f"</title><style>{_CSS}</style></head><body>\n{body}\n</body></html>\n")


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
        parts.append("<ul>" + "".join(f"<li>note: {marked(n)}</li>" for n in notes) + "</ul>")
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
    notes = [*_notes(r), *(w for w in r.warnings if EXPLORED.fullmatch(w))]
    return {"score": r.score.total, "output": "; ".join(notes) or "Graded.", "tests": tests,
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

def _bars_svg(items: list[tuple[str, float]], label: str) -> str:
    """Horizontal bars of rates in [0, 1]."""
    row, bar = 22, 270
    left = 12 + max([CHAR_PX * len(name) for name, _ in items] or [0])  # every label whole, never cut
    w = left + bar + 60
    h = row * len(items) + 10
    parts = []
    for i, (name, rate) in enumerate(items):
        y = 5 + i * row
        bw = bar * rate
        parts.append(f"<text x=\"{left - 6}\" y=\"{y + 14}\" text-anchor=\"end\">{html.escape(name)}</text>"
                     f"<rect x=\"{left}\" y=\"{y + 3}\" width=\"{bw:.1f}\" height=\"{row - 8}\" fill=\"#5a9e4b\"/>"
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
            key = (check, shape(message))
            found.setdefault(key, [set(), 0])
            found[key][0].add(r.student)
            found[key][1] += 1
    more = [{"check": check, "message": message, "students": len(who), "violations": n}
            for (check, message), (who, n) in found.items()]
    return sorted([*common, *more], key=lambda c: (-c["students"], -c["violations"], c["check"],
                                                   c["message"] or ""))[:limit]


def class_report(rubric: Rubric, results: list[StudentResult], common: list[dict], check_totals: dict[str, int],
                 n_events: int, similar: str = "", trusted: bool = False) -> str:
    """The class view; `similar` is the section on similar submissions (lab/grade/similarity.py), as HTML;
    `trusted`: graded from the submitted runs as sent (--trust-traces), nothing re-executed."""
    e = html.escape
    graded = [r for r in results if r.score]
    totals = [r.score.total for r in graded]
    parts = [f"<h1>HWM Lab: class report</h1>",
             f"<p>{len(results)} students, {len(graded)} graded, {len(results) - len(graded)} not gradable; "
             f"{n_events:,} events checked. Mean total {sum(totals) / len(totals) if totals else 0:.2f} of "
             f"{fmt(rubric.max_total)}.</p>", f"<p class=\"mode\">{e(TRUSTED if trusted else REEXECUTED)}</p>",
             "<h2>Scores</h2>", _histogram_svg(totals, rubric.max_total)]

    check_rates = []
    for rule in RULES:
        graded_runs = failed_runs = 0
        for r in graded:
            seen = {}
            for cs in r.score.checks:
                if cs.check == rule.check:
                    seen[cs.exercise] = (cs.runs, len(cs.failed_runs))
            graded_runs += sum(a for a, _ in seen.values())
            failed_runs += sum(b for _, b in seen.values())
        if graded_runs:
            check_rates.append((f"{rule.number}. {rule.check}", (graded_runs - failed_runs) / graded_runs,
                                graded_runs, failed_runs, check_totals.get(rule.check, 0)))
    parts.append("<h2>Pass rate per check</h2><p>Share of graded runs in which the check found nothing.</p>")
    parts.append(_bars_svg([(n, rate) for n, rate, *_ in check_rates], "pass rate per check"))
    parts.append("<table><tr><th>check</th><th>runs graded</th><th>runs failed</th><th>pass rate</th>"
                 "<th>violations</th></tr>" + "".join(
                     f"<tr><td>{e(n)}</td><td>{g}</td><td>{f}</td><td>{rate * 100:.1f}%</td><td>{v}</td></tr>"
                     for n, rate, g, f, v in check_rates) + "</table>")

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
                 "probes and the exercises' rules. Numbers are shown as N and digests as &lt;digest&gt;, "
                 "so the same mistake in different runs counts once per student.</p>")
    if common:
        top = max(c["students"] for c in common) or 1
        parts.append(_bars_svg([(f"{c['check']} #{i + 1}", c["students"] / top) for i, c in enumerate(common[:10])],
                               "students per failure message, relative to the most common"))
        parts.append("<table><tr><th>#</th><th>check</th><th>message</th><th>students</th><th>violations</th></tr>"
                     + "".join(f"<tr><td>{i + 1}</td><td>{e(c['check'])}</td><td>{e(c['message'] or '')}</td>"
                               f"<td>{c['students']}</td><td>{c['violations']}</td></tr>"
                               for i, c in enumerate(common)) + "</table>")
    else:
        parts.append("<p>No violations.</p>")

    if similar:
        parts.append(similar)
    bad = [r for r in results if not r.score]
    if bad:
        parts.append("<h2>Not gradable</h2><table><tr><th>student</th><th>submission</th><th>grading_status</th>"
                     "</tr>" + "".join(f"<tr><td>{e(r.student)}</td><td>{e(r.source)}</td><td>{e(r.status)}</td></tr>"
                                       for r in bad) + "</table>")
    return _page("HWM Lab class report", "\n".join(parts))
