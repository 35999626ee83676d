"""The grader's outputs besides the violations: grades.csv for an LMS, per-student feedback (HTML and Markdown),
Gradescope results.json files, and report.html, the class view with its pictures drawn as inline SVG.
Pure Python: the job hands in plain values."""

from __future__ import annotations

import csv
import html
import io
import json
from dataclasses import dataclass, field

from lab.grade.rubric import RULES_ENTRY, CheckScore, Rubric, Score, fmt
from lab.grade.rules import BY_ID, GRADER_ENTRIES, RULES


@dataclass
class StudentResult:
    student: str
    source: str
    status: str  # "ok" or why the submission could not be graded
    score: Score | None
    runs: list[tuple[str, int, str | None]]
    warnings: list[str] = field(default_factory=list)
    first: dict[tuple[int, str], dict] = field(default_factory=dict)  # (exercise, check) -> first violation


def write_all(storage, out: str, rubric: Rubric, results: list[StudentResult], common: list[dict],
              check_totals: dict[str, int], n_events: int, similar: str = "", trusted: bool = False) -> None:
    from lab.grade.storage import join

    storage.write(join(out, "grades.csv"), as_bytes(grades_csv(rubric, results)))
    for r in results:
        storage.write(join(out, "feedback", f"{r.student}.md"), as_bytes(feedback_md(rubric, r)))
        storage.write(join(out, "feedback", f"{r.student}.html"), as_bytes(feedback_html(rubric, r)))
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
    for cs in r.score.checks if r.score else []:
        if cs.failed:
            yield cs


def _how(cs: CheckScore) -> str:
    """How a failed (exercise, check) failed, in one sentence."""
    if cs.check == RULES_ENTRY:
        if cs.rules is None:
            return ("Your submission reports no rule results (submission format version 1): these points follow "
                    "the share of the exercise's other points that your traces earned.")
        ok, total = cs.rules
        return (f"{ok} of {total} rules held on your code." if total else
                f"No rule of exercise {cs.exercise} was checked on your code.")
    if cs.check in GRADER_ENTRIES:  # a probe of the grader's
        return ("The grader's own probe of your function found a case that breaks this rule." if cs.violations else
                "Not probed (graded without re-execution): these points follow the share of the exercise's other "
                "points that your traces earned.")
    return (f"Broken in {len(cs.failed_runs)} of {cs.runs} runs ({', '.join(cs.failed_runs)}), "
            f"{cs.violations} violation{'s' if cs.violations != 1 else ''} in all.")


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
    for note in [*r.score.notes, *r.warnings]:
        lines.append(f"- note: {note}")
    failed = list(_failed(r))
    if not failed:
        lines += ["", "Every check passed on every run. Well done.", ""]
        return "\n".join(lines)
    lines += ["", "## What failed", ""]
    for cs in failed:
        rule = BY_ID[cs.check]
        lines += [f"### Exercise {cs.exercise}: {rule.title} (`{cs.check}`), "
                  f"{fmt(cs.points)} / {fmt(cs.max_points)} points", "",
                  f"The rule: {rule.rule}", "", _how(cs), ""]
        v = r.first.get((cs.exercise, cs.check))
        if v:
            where = _where(v)
            lines += [f"First violation ({where}): {v.get('detail') or ''}", ""]
            excerpt = _excerpt_lines(v)
            if excerpt:
                lines += [f"The trace around it (events of {v.get('node')}; `>>` marks the event):", "", "```",
                          *excerpt, "```", ""]
    return "\n".join(lines)


_CSS = """body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
table{border-collapse:collapse;margin:1rem 0}td,th{border:1px solid #ccc;padding:.3rem .6rem;text-align:left}
th{background:#f3f3f3}pre{background:#f7f7f7;padding:.6rem;overflow-x:auto;font-size:.8rem}
.here{background:#ffe9a8}.bad{color:#a40000}.ok{color:#176b00}.rule{font-style:italic}
svg text{font-family:system-ui,sans-serif;font-size:11px}"""


def _page(title: str, body: str) -> str:
    return (f"<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            f"<style>{_CSS}</style></head><body>\n{body}\n</body></html>\n")


def feedback_html(rubric: Rubric, r: StudentResult) -> str:
    e = html.escape
    parts = [f"<h1>HWM Lab feedback: {e(r.student)}</h1>"]
    if not r.score:
        parts.append(f"<p class=\"bad\">Your submission ({e(r.source)}) could not be graded: <b>{e(r.status)}</b>."
                     "</p><p>Nothing was graded, so every exercise scores 0. Fix the submission and submit again "
                     "(<code>hwm-lab submit</code> packs it correctly).</p>")
        return _page(f"Feedback {r.student}", "\n".join(parts))
    parts.append(f"<p>Total: <b>{fmt(r.score.total)} / {fmt(rubric.max_total)}</b></p>")
    parts.append("<table><tr><th>exercise</th><th>points</th></tr>" + "".join(
        f"<tr><td>{x.number}. {e(x.title)}</td><td>{fmt(r.score.by_exercise[x.number])} / {fmt(x.max_points)}"
        f"</td></tr>" for x in rubric.exercises) + "</table>")
    notes = [*r.score.notes, *r.warnings]
    if notes:
        parts.append("<ul>" + "".join(f"<li>note: {e(n)}</li>" for n in notes) + "</ul>")
    failed = list(_failed(r))
    if not failed:
        parts.append("<p class=\"ok\">Every check passed on every run. Well done.</p>")
    else:
        parts.append("<h2>What failed</h2>")
    for cs in failed:
        rule = BY_ID[cs.check]
        parts.append(f"<h3>Exercise {cs.exercise}: {e(rule.title)} (<code>{cs.check}</code>), "
                     f"{fmt(cs.points)} / {fmt(cs.max_points)} points</h3>")
        parts.append(f"<p class=\"rule\">The rule: {e(rule.rule)}</p>")
        parts.append(f"<p>{e(_how(cs))}</p>")
        v = r.first.get((cs.exercise, cs.check))
        if v:
            where = _where(v)
            parts.append(f"<p>First violation ({e(where)}): <b>{e(v['detail'] or '')}</b></p>")
            if v.get("excerpt"):
                rows = []
                for seq, line, here in v["excerpt"]:
                    text = line if len(line) <= 220 else line[:220] + " ..."
                    rows.append(f"<span class=\"here\">{e(text)}</span>" if here else e(text))
                parts.append(f"<p>The trace around it (events of {e(str(v.get('node')))}, the event highlighted):"
                             f"</p><pre>{chr(10).join(rows)}</pre>")
    return _page(f"Feedback {r.student}", "\n".join(parts))


# ---- Gradescope ---------------------------------------------------------------------------------------------

def gradescope(rubric: Rubric, r: StudentResult) -> dict:
    """Gradescope's autograder results.json: score, and one test per (exercise, check)."""
    if not r.score:
        return {"score": 0, "output": f"Not graded: {r.status}",
                "tests": [{"name": "Submission can be graded", "score": 0, "max_score": 0, "status": "failed",
                           "output": r.status, "visibility": "visible"}]}
    tests = []
    for cs in r.score.checks:
        rule = BY_ID[cs.check]
        passed = not cs.failed and cs.runs > 0
        if passed:
            output = (f"Passed on {cs.runs} run{'s' if cs.runs != 1 else ''}. {rule.rule}"
                      if cs.check not in GRADER_ENTRIES
                      else f"{_how(cs) if cs.rules is None and cs.check == RULES_ENTRY else 'Every rule ok.'} "
                           f"{rule.rule}")
        elif cs.runs == 0:
            output = f"No runs of exercise {cs.exercise} to grade. {rule.rule}"
        else:
            v = r.first.get((cs.exercise, cs.check))
            output = (f"{_how(cs)} The rule: {rule.rule}"
                      + (f"\nFirst violation ({_where(v)}): {v.get('detail') or ''}" if v else ""))
        tests.append({"name": f"Exercise {cs.exercise} ({_title(rubric, cs.exercise)}): {rule.title} [{cs.check}]",
                      "score": cs.points, "max_score": cs.max_points, "status": "passed" if passed else "failed",
                      "output": output, "visibility": "visible"})
    return {"score": r.score.total, "output": "; ".join([*r.score.notes, *r.warnings]) or "Graded.",
            "tests": tests}


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

    parts.append("<h2>Most common failure messages</h2><p>Numbers are shown as N and digests as &lt;digest&gt;, "
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
