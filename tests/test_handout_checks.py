"""Issue 33, on a handout made by `hwm-lab handout` (no solutions/ importable): each exercise is checked on its own,
its runs wait for the exercises they need and say which, a failure lands on the exercise whose rule broke, the
explorer's lessons are true without a reference (what the lab's rules compute, the call that went wrong), its
counterexample replays as written, and the small points of the issue."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import pytest

from lab.core.interface import EXERCISES

from tests.handoututil import ALL, ROOT, in_handout, made_handout, python_in_handout, variant

# Exercise 1 as the article writes it: right for odd cluster sizes only.
ARTICLE = '''from typing import Sequence


def high_water_mark(match_indexes: Sequence[int]) -> int:
    return sorted(match_indexes)[len(match_indexes) // 2]
'''
# Exercise 4 that loops on an index below the mark: the explorer reads at every index, so it is reached.
LOOPS_BELOW = '''def check_read(index, high_water_mark):
    while index < high_water_mark:
        pass
    if index < 1:
        return f"not available: index {index} does not exist (the log starts at index 1)"
    if index > high_water_mark:
        return f"not available: index {index} is above the high-water mark {high_water_mark}"
    return None
'''
# Exercise 2 that counts the acknowledgement as it came: a late one moves the returned mark back, which the replica
# ignores (no rule of the grader breaks), but the call breaks exercise 2's rule.
MOVES_BACK = '''def on_replication_response(match_index, follower, acknowledged, current_hwm, generation, generation_at,
                            high_water_mark):
    match_index[follower] = max(match_index.get(follower, 0), acknowledged)
    others = [m for node, m in match_index.items() if node != follower]
    candidate = high_water_mark(others + [acknowledged])
    if generation_at(candidate) == generation:
        return candidate
    return current_hwm
'''
EVERYTHING = dict.fromkeys(ALL, "solutions")


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    return made_handout(tmp_path_factory)


def hwm(folder, *argv, timeout=300):
    return in_handout(folder, "lab.cli", *argv, timeout=timeout)


def first_lines(result, count=5) -> str:
    return "\n".join(result.stdout.splitlines()[:count])


def test_no_solutions_are_importable_there(made):
    probe = python_in_handout(made, "import lab, exercises\nprint(lab.__file__)\nimport solutions")
    assert str(made / "lab") in probe.stdout and "No module named 'solutions'" in probe.stderr, probe.stderr
    assert not (made / "solutions").exists()


# ---- an exercise checked on its own ---------------------------------------------------------------------------


def test_exercise_1_alone_passes_and_says_what_its_runs_wait_for(made, tmp_path):
    folder = variant(made, tmp_path, high_water_mark="solutions")
    check = hwm(folder, "exercise", "check", "1")
    assert check.returncode == 0, check.stdout + check.stderr
    first = first_lines(check, 2)
    assert "-- PASSING" in first and "wait for your exercises 2, 3, 4, 5" in first, check.stdout
    assert "[waits] scenario n4 (generation): it needs your exercises 2, 3, 4" in check.stdout
    assert "timeout" not in check.stdout and "[FAIL]" not in check.stdout
    listing = hwm(folder, "exercise", "list", "--json")
    assert [row["status"] for row in json.loads(listing.stdout)][:2] == ["passing", "not started"]


def test_exercise_1_wrong_fails_naming_the_call_and_its_input(made, tmp_path):
    folder = variant(made, tmp_path, high_water_mark=ARTICLE)
    check = hwm(folder, "exercise", "check", "1")
    assert check.returncode == 1
    first = first_lines(check)
    assert "-- FAILING" in first
    assert "high_water_mark([0, 1]) returned 1: only 1 of the 2 match indexes reaches index 1 (a majority is 2)" \
        in first, first
    listing = hwm(folder, "exercise", "list", "--json")
    assert json.loads(listing.stdout)[0]["status"] == "failing"


def test_exercise_2_is_not_blamed_for_exercise_1(made, tmp_path):
    folder = variant(made, tmp_path, high_water_mark=ARTICLE, leader="solutions")
    check = hwm(folder, "exercise", "check", "2")
    assert check.returncode == 0, check.stdout
    assert "[BROKEN]" not in check.stdout and "-- PASSING" in first_lines(check, 1)
    assert "exercise 2 uses your exercise 1, which broke its rule: high_water_mark([7, 7, 5, 3]) returned 7: only 2 " \
           "of the 4 match indexes reach index 7 (a majority is 3)" in first_lines(check, 3), check.stdout


def test_with_everything_else_written_exercise_2s_runs_lay_exercise_1s_fault_on_exercise_1(made, tmp_path):
    folder = variant(made, tmp_path, **{**EVERYTHING, "high_water_mark": ARTICLE})
    check = hwm(folder, "exercise", "check", "2")
    assert check.returncode == 0, check.stdout
    assert "[BROKEN]" not in check.stdout and "wait" not in check.stdout
    assert "[exercise 1] exercise 2 uses your exercise 1, which breaks a rule in the run below" in check.stdout
    assert re.search(r"high_water_mark\(\[[\d, ]+\]\) returned \d+ \(exercise 1\); judged on its own inputs, only \d "
                     r"of the 4 match indexes reach", check.stdout), check.stdout
    one = hwm(folder, "exercise", "check", "1")
    assert one.returncode == 1 and "[FAIL] scenario n4" in one.stdout
    assert "a call of your function broke its exercise's rule in this run: high_water_mark(" in one.stdout


def _follower_that_raises_at_index_3() -> str:
    """Exercise 3 right on its rules' small logs, raising KeyError once a request follows index 3 (as N4's do)."""
    text = (ROOT / "solutions" / "follower.py").read_text(encoding="utf-8")
    return text.replace("    truncate_from = None\n",
                        "    truncate_from = None\n    if prev_index == 3:\n        raise KeyError(prev_index)\n")


def test_another_exercises_fault_in_a_run_is_that_exercises_and_comes_after_this_ones_own(made, tmp_path):
    right = variant(made, tmp_path / "right", **{**EVERYTHING, "follower": _follower_that_raises_at_index_3()})
    check = hwm(right, "exercise", "check", "1")
    assert check.returncode == 0, check.stdout  # exercise 1's own rules and runs hold
    assert re.search(r"exercise 1 uses your exercise 3, which failed in this run: follower_append\(.*\) raised "
                     r"KeyError: 3 -- exercises/follower\.py:\d+", first_lines(check, 2)), check.stdout
    assert "[exercise 3] scenario n4 (generation, sim, seed 7)" in check.stdout
    wrong = variant(made, tmp_path / "wrong", **{**EVERYTHING, "follower": _follower_that_raises_at_index_3(),
                                                 "high_water_mark": ARTICLE})
    check = hwm(wrong, "exercise", "check", "1")
    assert check.returncode == 1
    said = check.stdout
    assert said.index("high_water_mark([0, 1]) returned 1") < said.find("follower.py") or "follower.py" not in said


def test_one_verdict_per_exercise_in_check_list_the_students_tests_and_submit(made, tmp_path):
    folder = variant(made, tmp_path, **{**EVERYTHING, "high_water_mark": ARTICLE})
    listing = json.loads(hwm(folder, "exercise", "list", "--json").stdout)
    assert [row["status"] for row in listing] == ["failing"] + ["passing"] * (len(EXERCISES) - 1)
    tests = in_handout(folder, "pytest", "--impl", "exercises", "-q", "-p", "no:cacheprovider", timeout=600)
    failed = re.findall(r"^FAILED (\S+)", tests.stdout, re.M)
    assert failed == ["tests/test_exercises.py::test_exercise_keeps_every_rule[exercise1]"], tests.stdout[-3000:]
    submitted = hwm(folder, "submit", "--student", "s1", "--json", timeout=600)
    assert submitted.returncode == 1, submitted.stderr
    table = json.loads(submitted.stdout)["table"]
    assert [row["verdict"] for row in table] == ["failing"] + ["passing"] * (len(EXERCISES) - 1)


# ---- the explorer -------------------------------------------------------------------------------------------


def test_explore_finds_the_articles_formula_and_tells_the_call_without_a_reference(made, tmp_path):
    folder = variant(made, tmp_path, **{**EVERYTHING, "high_water_mark": ARTICLE})
    found = hwm(folder, "explore", "--exercise", "1", "--budget", "60", "--out", "ce", "--json")
    assert found.returncode == 1, found.stdout + found.stderr
    violation = json.loads(found.stdout)["violation"]
    said = violation["explanation"]
    # the cluster's rule, broken in the run as shown (tests/test_explanations.py checks each number of it)
    assert violation["rule"] == "hwm-majority" and violation["kind"] == "state" and violation["nodes"] == 4, said
    assert said.startswith("Rule broken: The HWM never exceeds what a majority held\nA rule of the cluster's state")
    # the call of the student's function, its input, its result, what its exercise's rule says of its inputs (the
    # leader's match indexes), and what the leader then did
    assert re.search(r"high_water_mark\(\[[\d, ]+\]\) returned \d+ \(exercise 1\); judged on its own inputs, only \d "
                     r"of the 4 match indexes reach index \d+ \(a majority is 3\)", said), said
    assert re.search(r"What the run did in that step: [A-D] raised its high-water mark from \d+ to \d+, and its "
                     r"entries up to index \d+ are held by .*: \d of 4 nodes", said), said
    assert "reference" not in said.lower()
    # As written: the script names the code it was found with, so a replay without flags breaks the same rule.
    assert "impl exercises:high_water_mark" in (folder / "ce" / "counterexample.txt").read_text()
    replayed = hwm(folder, "simulate", "--script", "ce/counterexample.txt", "--json")
    assert replayed.returncode == 1, replayed.stderr
    assert json.loads(replayed.stdout)["violation"]["detail"] == violation["detail"]


def test_explore_with_the_rest_unwritten_says_at_once_what_it_waits_for_as_the_check_does(made, tmp_path):
    # The student guide's promise: explore runs once every function it needs is written, and says at once which
    # exercises it waits for, the list `exercise check` gives (here, exercise 1 written alone).
    import time

    folder = variant(made, tmp_path, high_water_mark="solutions")
    started = time.monotonic()
    said = hwm(folder, "explore", "--exercise", "1", "--budget", "30", "--out", "ce")
    took = time.monotonic() - started
    assert said.returncode == 2, said.stdout + said.stderr
    assert said.stdout == "" and not (folder / "ce").exists()  # nothing searched, nothing written
    assert said.stderr.strip() == ("hwm-lab explore: exercise 1 cannot be searched yet: the search needs your exercises "
                                   "2, 3, 4, 5 (not written yet, or a file that does not import), as hwm-lab exercise "
                                   "check 1 says"), said.stderr
    check = hwm(folder, "exercise", "check", "1")
    assert "[waits] explore: it needs your exercises 2, 3, 4, 5" in check.stdout, check.stdout
    assert took < 30  # not its budget: at once (bench/explore.py times it beside its floor)


def test_explore_finds_a_read_gate_that_loops_below_the_mark(made, tmp_path):
    folder = variant(made, tmp_path, **{**EVERYTHING, "reads": LOOPS_BELOW})
    found = hwm(folder, "explore", "--exercise", "4", "--limit", "0.2", "--budget", "90", "--json")
    assert found.returncode == 1, found.stdout + found.stderr
    violation = json.loads(found.stdout)["violation"]
    assert violation["rule"] == "student-fault"
    index, mark = map(int, re.search(r"check_read\((\d+), (\d+)\) did not return within 0.2 s",
                                     violation["explanation"]).groups())
    assert 1 <= index < mark


def test_explore_finds_a_leader_whose_returned_mark_moves_back(made, tmp_path):
    folder = variant(made, tmp_path, **{**EVERYTHING, "leader": MOVES_BACK})
    found = hwm(folder, "explore", "--exercise", "2", "--budget", "90", "--json")
    assert found.returncode == 1, found.stdout + found.stderr
    violation = json.loads(found.stdout)["violation"]
    assert violation["rule"] == "student-call" and violation["kind"] == "call"
    assert violation["title"] == "Every call of your functions keeps its exercise's rule"  # an invariant's words
    said = violation["explanation"]
    assert re.search(r"on_replication_response\(.*\) returned (\d+) \(exercise 2\); judged on its own inputs, the "
                     r"high-water mark was (\d+): it never moves back", said), said
    assert re.search(r"What the run did in that step: [A-E] kept its high-water mark at \d+", said), said  # (its mark
    # never moves back: the cluster's rules hold, and the explanation says so)
    assert "No rule of the cluster's state broke in these steps." in said


# ---- the small points -----------------------------------------------------------------------------------------


def test_check_5_prints_no_write_ahead_log_warning_on_stderr(made, tmp_path):
    # a plan that keeps the later segments: the rule that reopens the log finds a gap, as it should, and says so in
    # its report; the log's own warning goes to the check's log file, never the student's screen
    folder = variant(made, tmp_path, **EVERYTHING)
    path = folder / "exercises" / "wal_truncation.py"
    path.write_text(path.read_text().replace("            delete.append(segment.path)", "            pass"))
    check = hwm(folder, "exercise", "check", "5")
    assert check.returncode == 1 and "reopening the log after truncation" in check.stdout
    assert [line for line in check.stderr.splitlines() if not line.startswith("... ")] == [], check.stderr
    assert "write-ahead log" in (folder / ".hwm-lab" / "checks" / "ex5-check.log").read_text()


def test_a_looping_check_read_gets_an_explore_line_with_its_reason(made, tmp_path):
    folder = variant(made, tmp_path, **{**EVERYTHING, "reads": LOOPS_BELOW})
    check = hwm(folder, "exercise", "check", "4")
    assert check.returncode == 1
    assert check.stdout.splitlines()[-1] == ("  [not run] explore: your check_read failed above, and every search would "
                                             "stop at that call: fix it first"), check.stdout
    said = json.loads(hwm(folder, "exercise", "check", "4", "--json").stdout)["exploration"]
    assert said["status"] == "not run" and "check_read" in said["text"]


def test_k2s_failure_for_exercise_6_says_what_broke_and_the_steps(made, tmp_path):
    # the follower cuts one entry too early: K2 passes its expectations, but a call broke exercise 6's rule
    folder = variant(made, tmp_path, **EVERYTHING)
    path = folder / "exercises" / "leader_epoch.py"
    path.write_text(path.read_text().replace("        return end_index + 1", "        return end_index"))
    check = hwm(folder, "exercise", "check", "6")
    assert check.returncode == 1
    k2 = check.stdout.split("[FAIL] scenario k2 (leader-epoch, sim, seed 7)")[1].split("\n  [")[0]
    assert "a call of your function broke its exercise's rule in this run: epoch_truncation_point(" in k2
    step = int(re.search(r"broken: the rule of exercise 6 \(epoch_truncation_point\), by [A-C]'s call in step (\d)",
                         k2).group(1))
    assert f"steps that show it ({step} of 6):" in k2 and f"\n        {step}. " in k2, k2


def test_the_exercises_package_gives_the_function_every_time(made, tmp_path):
    folder = variant(made, tmp_path, high_water_mark="solutions")
    said = python_in_handout(folder, "import exercises\n"
                                     "print(exercises.high_water_mark([3, 3, 1]), exercises.high_water_mark([7, 5, 5, 3]))")
    assert said.returncode == 0 and said.stdout.split() == ["3", "5"], said.stderr  # the second call too


def test_the_students_help_names_their_commands_only(made):
    said = hwm(made, "--help")
    assert said.returncode == 0
    commands = set(re.findall(r"^    (\S+)", said.stdout, re.M))
    assert {"exercise", "submit", "explore", "demo", "simulate"} <= commands
    assert not commands & {"grade", "handout", "spark-cluster"}, commands
    demo = hwm(made, "demo", "--help")
    assert "reference" not in demo.stdout and "your code in exercises/" in demo.stdout.replace("\n", " ")


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_submission_zip_is_not_committed(made):
    ignored = subprocess.run(["git", "-C", str(made), "check-ignore", "-q", "submission-s1.zip"])
    assert ignored.returncode == 0
    kept = subprocess.run(["git", "-C", str(made), "check-ignore", "-q", "exercises/reads.py"])
    assert kept.returncode == 1


def test_the_course_repository_still_lists_the_instructors_commands():
    said = subprocess.run([sys.executable, "-m", "lab.cli", "--help"], cwd=ROOT, capture_output=True, text=True)
    commands = set(re.findall(r"^    (\S+)", said.stdout, re.M))
    assert {"grade", "handout"} <= commands, said.stdout
