"""The grader's outputs for the class besides the violations: grades.csv for an LMS, and report.html, the class view
with its pictures drawn as inline SVG; write_all writes them with each student's feedback and Gradescope files
(lab/grade/outputs/feedback.py). Pure Python: the job hands in plain values."""

from __future__ import annotations

import csv
import html
import io
import json
import re

from lab.grade.outputs.feedback import FEEDBACK, StudentResult, feedback_html, feedback_md, gradescope, notes_of
from lab.grade.outputs.graded import NODE_NAME
from lab.grade.outputs.html_page import page
from lab.grade.inputs.rubric import RULES_ENTRY, Rubric, fmt
from lab.grade.inputs.rubric_entries import BY_ID, GRADER_ENTRIES, RULES


def write_all(storage, out: str, rubric: Rubric, results: list[StudentResult], common: list[dict],
              check_totals: dict[str, int], n_events: int, similar: str = "", similar_to: dict | None = None,
              trusted: bool = False, sandbox: str = "") -> None:
    from lab.grade.inputs.storage import join

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
    """A failure message with its numbers as N and digests as <digest> (as lab.grade.outputs.graded.common_messages)."""
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
    notes = [n for n in notes_of(r) if not re.fullmatch(r"exercise \d+: (not started|not submitted)", n)
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
    submissions (lab/grade/outputs/similarity.py), as HTML, and `similar_to` its pairs by student; `trusted`: graded from
    the submitted runs as sent (--trust-traces), nothing re-executed; `sandbox`: what the grader proved of its
    sandbox (lab/grade/sandbox/proof.py)."""
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
    return page("HWM Lab class report", "\n".join(parts), wide=True, script=STUDENTS_JS)
