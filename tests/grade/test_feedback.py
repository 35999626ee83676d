"""Feedback a student can act on (lab/grade/outputs/feedback.py), without Spark: each broken rule named with its input
and the values expected and returned, an exercise not started said so, the explorer's steps as a list, no raw markup, the
run to play linked (and named in Gradescope's results.json), every failure counted in the class's most common ones
(probes and rules too); and report.html of a 32-student class no wider than a laptop's window, its side-by-side
code folded until opened (measured in Chromium)."""

from __future__ import annotations

import re

import pytest

from lab.grade.outputs import feedback, report
from lab.grade.inputs.rubric import load, score
from lab.grade.outputs.similarity import Pair, section_html
from tests.dashboard.browser import BROWSER_MARKS, chromium

RUNS = [(f"ex{n}-s1", n, "s1") for n in (1, 2, 3, 5, 6)]  # exercise 4: no runs (it was not started)
BROKEN_RULE = ["answer match_index = prev_index + len(entries), not the log end",
               False, "log generations [1, 1, 1], request prev=(0, 0) entries (index, generation) [(1, 1)]: "
                      "expected match_index 1: entries 2-3 are not known to match the leader; got "
                      "AppendResult(success=True, truncate_from=None, append=(), match_index=3, conflict_index=0)"]
EXPLORED = ("exercise 1: exploration found: Rule broken: The HWM never exceeds what a majority held\n"
            "The 3 steps that lead there:\n  1. A starts an election for generation 1\n"
            "  2. B receives from A: vote request for generation 1 (log end 0, last generation 0)\n"
            "  3. A receives from B: vote granted in generation 1\n"
            "After step 3: leader A raised its high-water mark to 1 in generation 1, but only 1 of 3 nodes hold "
            "index 1 (a majority is 2).\nThe call of your function that went wrong: on A, high_water_mark([1, 0, 0]) "
            "returned 1.")


def student(name: str = "amy") -> feedback.StudentResult:
    rubric = load(None)
    s = score(rubric, RUNS, {("ex1-s1", "hwm-majority"): 2}, rules={1: (2, 3), 2: (3, 3), 3: (7, 8), 4: (0, 0),
                                                                     5: (4, 4), 6: (5, 5)},
              probes={(3, "match-acknowledged"): False})
    r = feedback.StudentResult(name, f"{name}.zip", "ok", s, RUNS, warnings=[EXPLORED])
    r.first[(1, "hwm-majority")] = {"run": "ex1-s1", "node": "A", "time": 0.18, "seq": 76,
                                    "detail": "A raised its HWM from 5 to 6 in generation 1, but only 2 of 4 nodes "
                                              "held index 6 (a majority is 3)",
                                    "excerpt": [(76, '{"v":1,"seq":76,"type":"hwm_changed",' + '"x":1,' * 60 + '}',
                                                 True)]}
    r.first[(3, "match-acknowledged")] = {"run": "the grader's probe", "node": None, "time": None,
                                          "detail": "follower log generations [1], leader log generations [1], "
                                                    "request prev_index 0 with 0 entries: acknowledged match_index 1"}
    r.statuses = {1: "ok", 2: "ok", 3: "ok", 4: "not started", 5: "ok", 6: "ok"}
    r.rule_results = {1: [["the majority rule", True, ""], ["even cluster sizes (N4)", False,
                                                            "match indexes [0, 1] (2 nodes, a majority is 2): got 1, "
                                                            "expected 0"]],
                      3: [BROKEN_RULE]}
    r.playable = {1: {"file": f"{name}-ex1.html", "kind": "run", "run": "ex1-s1", "bytes": 220_000, "events": 300,
                      "shown": 300}}
    return r


def test_each_broken_rule_is_named_with_its_input_and_the_values_expected_and_returned():
    rubric, r = load(None), student()
    md, page = feedback.feedback_md(rubric, r), feedback.feedback_html(rubric, r)
    for text in (md, page):
        assert "even cluster sizes (N4)" in text and "match indexes [0, 1] (2 nodes, a majority is 2): got 1, " \
                                                      "expected 0" in text
        assert "log generations [1, 1, 1], request prev=(0, 0)" in text and "expected match_index 1" in text
        assert "got AppendResult(success=True" in text
        assert "The case: " in text and "First violation (run the grader's probe" not in text
    tests = {t["name"]: t for t in feedback.gradescope(rubric, r)["tests"]}
    rules3 = next(t for name, t in tests.items() if name.startswith("Exercise 3") and "[rules]" in name)
    assert "- answer match_index = prev_index + len(entries), not the log end: log generations [1, 1, 1]" \
        in rules3["output"]


def test_an_exercise_not_started_says_so():
    rubric, r = load(None), student()
    md, page = feedback.feedback_md(rubric, r), feedback.feedback_html(rubric, r)
    for text in (md, page):
        assert "Exercise 4 is not started: its functions still raise NotImplementedError." in text
        assert "no runs for exercise 4" not in text and "note:" not in text
        assert "Not started: the functions of exercise 4 still raise NotImplementedError" in text
    assert "`exercises/reads.py`" in md and "<code>exercises/reads.py</code>" in page
    four = [t for t in feedback.gradescope(rubric, r)["tests"] if t["name"].startswith("Exercise 4")]
    assert four and all(t["output"].startswith("Not started") and t["score"] == 0 for t in four)


def test_the_explorers_steps_are_a_list_and_no_markup_shows_raw():
    rubric, r = load(None), student()
    md, page = feedback.feedback_md(rubric, r), feedback.feedback_html(rubric, r)
    steps = re.search(r"<h4>What the explorer found</h4>.*?<ol>(.*?)</ol>", page, re.S).group(1)
    assert re.findall(r"<li>(.*?)</li>", steps) == [
        "A starts an election for generation 1",
        "B receives from A: vote request for generation 1 (log end 0, last generation 0)",
        "A receives from B: vote granted in generation 1"]
    assert "1. A starts an election for generation 1\n2. B receives" in md
    assert "exploration found" not in page  # the note became its section
    assert "`" not in page  # every code span is <code>
    assert "white-space:pre-wrap" in page  # a long trace line wraps instead of running off the page


def test_the_run_to_play_is_linked_and_results_json_says_where():
    rubric, r = load(None), student()
    page, md = feedback.feedback_html(rubric, r), feedback.feedback_md(rubric, r)
    assert page.count('href="amy-ex1.html"') == 2  # the table's row and the exercise's section
    assert "[amy-ex1.html](amy-ex1.html)" in md and "marked red" in md
    results = feedback.gradescope(rubric, r)
    assert results["extra_data"] == {"runs_to_play": {"1": "feedback/amy-ex1.html"}}
    one = [t for t in results["tests"] if t["name"].startswith("Exercise 1") and t["status"] == "failed"]
    assert one and all(t["output"].endswith("Watch the failing run in any browser: feedback/amy-ex1.html")
                       for t in one)
    # an exercise that lost points on its rules only, with no failing run: said, not a dead link
    assert "No run of this exercise failed, so there is no run to watch" in md


def test_the_most_common_failures_count_probes_and_rules_too():
    results = [student(f"s{i:02d}") for i in range(3)]
    common = report.most_common([{"check": "hwm-majority", "message": "A raised its HWM from N to N", "students": 1,
                                  "violations": 9}], results)

    def students(check, start):
        return [c["students"] for c in common if c["check"] == check and c["message"].startswith(start)]
    assert students("match-acknowledged", "follower log generations [N], leader log generations [N]") == [3]
    assert students("rules", "answer match_index = prev_index + len(entries), not the log end: log") == [3]
    assert students("rules", "even cluster sizes (NN): match indexes [N, N]") == [3]  # numbers as N
    assert students("hwm-majority", "A raised its HWM from N to N") == [1]
    assert [c["students"] for c in common] == [3, 3, 3, 1]


def big_class(n: int = 32) -> str:
    rubric = load(None)
    results = [student(f"s{i:04d}") for i in range(n)]
    long_line = "    return sorted(match_indexes, key=lambda m: (m, len(match_indexes)))[len(match_indexes) // 2]" * 3
    pairs = [Pair(scope, f"s{i:04d}", f"s{j:04d}", 0.9,
                  tuple(("exercises/high_water_mark.py", k, k, long_line, long_line) for k in range(1, 13)))
             for scope in ("whole submission", "exercises/high_water_mark.py")
             for i in range(n) for j in range(i + 1, n)]  # more than the 856 pairs of bench/grading.py's reexec32
    common = [{"check": "scenario", "message": "expectation 'expect hwm N on A,B' failed: " + "A: N, B: N; " * 40,
               "students": 8, "violations": 24}]
    return report.class_report(rubric, results, common, {"hwm-majority": 64}, 69_456, section_html(pairs, n))


def in_chromium(test):
    for mark in BROWSER_MARKS:
        test = mark(test)
    return test


@in_chromium
def test_report_html_of_a_32_student_class_fits_a_laptops_window(tmp_path):
    page_html = big_class()
    assert page_html.count("<details>") >= 800 and "<details open" not in page_html
    path = tmp_path / "report.html"
    path.write_text(page_html, encoding="utf-8")
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(path.as_uri())
        width = page.evaluate("document.documentElement.scrollWidth")
        folded = page.evaluate("document.documentElement.scrollHeight")
        page.evaluate("[...document.querySelectorAll('details')].slice(0, 20).forEach((d) => { d.open = true; })")
        opened = page.evaluate("document.documentElement.scrollHeight")
        width_opened = page.evaluate("document.documentElement.scrollWidth")  # long code lines wrap too
        page.close()
    assert width <= 1280 and width_opened <= 1280, (width, width_opened)
    assert opened > folded + 20 * 12 * 20  # the side-by-side code was folded, and opens (12 rows a pair)


def class_of(n: int) -> list[feedback.StudentResult]:
    """n students as a large class's grade leaves them: most right, one in five with exercise 1 wrong (the
    student() above), one in seven with a note, one in eleven with exercise 4 not started, and two entries that
    are no student's (an empty zip, a README)."""
    rubric = load(None)
    runs = [(f"ex{k}-s1", k, "s1") for k in range(1, 7)]
    out = []
    for i in range(n):
        if i % 5 == 0:
            r = student(f"s{i:04d}")
        else:
            r = feedback.StudentResult(f"s{i:04d}", f"s{i:04d}.zip", "ok", score(rubric, runs, {}, rules={
                k: (3, 3) for k in range(1, 7)}), runs)
            r.statuses = {k: "ok" for k in range(1, 7)}
        if i % 7 == 3:
            r.warnings.append(f"not reproducible: run ex2-s1 (exercise 2) counts for nothing: re-simulated from its "
                              f"own seed with exercises/leader.py, the files it was made from, its events differ")
        if i % 11 == 4:
            r.statuses[4] = "not started"
        out.append(r)
    out += [feedback.StudentResult("empty", "empty.zip", "missing manifest: the submission is empty", None, []),
            feedback.StudentResult("README.txt", "README.txt", "not a submission: neither a zip nor a folder that "
                                   "holds a manifest.json", None, [])]
    return out


@in_chromium
def test_report_html_of_300_students_has_a_table_that_sorts_filters_and_fits_1280_px(tmp_path):
    rubric, results = load(None), class_of(300)
    page_html = report.class_report(rubric, results, [], {"hwm-majority": 120}, 1_000_000,
                                    similar_to={"s0010": [("s0020", "whole submission", 0.91)],
                                                "s0020": [("s0010", "whole submission", 0.91)]})
    (tmp_path / "report.html").write_text(page_html, encoding="utf-8")
    # Each rule's failure rate is what the students' scores say: students who lost points on it, of those graded.
    graded = [r for r in results if r.score]
    shown = {c["check"]: c for c in report.rule_rates(results)}
    for check in ("hwm-majority", "rules", "match-acknowledged"):
        lost = {r.student for r in graded for cs in r.score.checks if cs.check == check and cs.points < cs.max_points}
        assert (shown[check]["students"], shown[check]["graded"]) == (len(lost), len(graded)) != (0, 0)
        assert f"<td>{check}</td><td>{len(lost)}</td><td>{len(graded)}</td><td>{100 * len(lost) / len(graded):.1f}%" \
            in page_html
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto((tmp_path / "report.html").as_uri())
        # the entries not graded come first on the page, then the table, attention first
        order = page.evaluate("[...document.querySelectorAll('h2')].map((h) => h.textContent)")
        assert order[:3] == ["Not gradable (2)", "Students", "Scores"], order
        rows = page.evaluate("[...document.querySelectorAll('#students tbody tr')].map((r) => "
                             "[r.cells[0].textContent, r.dataset.attention || ''])")
        assert len(rows) == 302
        flags = [a for _, a in rows]
        assert flags == sorted(flags, reverse=True) and flags.count("1") >= 2 + 300 // 7
        assert {"empty", "README.txt", "s0010", "s0020", "s0004"} <= {s for s, a in rows if a}
        # nothing wider than the window, and no header on two lines
        assert page.evaluate("document.documentElement.scrollWidth") <= 1280
        wrapped = page.evaluate("""[...document.querySelectorAll('th')].filter((th) => {
            const range = document.createRange(); range.selectNodeContents(th);
            const lines = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
            return lines.size > 1; }).map((th) => th.textContent)""")
        assert wrapped == [], wrapped
        # sort by total, lowest first; then filter by a word, and by "needs attention"
        page.click("#students th:nth-child(2)")
        totals = page.evaluate("[...document.querySelectorAll('#students tbody tr')].map((r) => "
                               "Number(r.cells[1].dataset.v))")
        assert totals == sorted(totals) and totals[0] == -1
        page.fill("#find", "s0021")
        assert page.evaluate("[...document.querySelectorAll('#students tbody tr')].filter((r) => !r.hidden)"
                             ".map((r) => r.cells[0].textContent)") == ["s0021"]
        page.fill("#find", "")
        page.check("#attention")
        visible = page.evaluate("[...document.querySelectorAll('#students tbody tr')].filter((r) => !r.hidden).length")
        assert visible == flags.count("1") and "rows shown" in page.text_content("#shown")
        page.close()
