"""When the student's code fails, `hwm-lab exercise check N` says where and why, at once: for an exception, an
endless loop, a syntax error and a wrong return type in each exercise, the check ends within 30 s and its first
five lines name the function, its inputs and the student's own file and line (on the simulator, and as real node
processes for a representative subset)."""

from __future__ import annotations

import ast
import json
import re
import signal
import subprocess
import sys
import time

import pytest

from lab.student.checks import EXERCISES
from tests.studentcode import StudentCode

# What each exercise's check calls first, and the file it is in.
BROKEN = {ex.number: (ex.functions[0], f"{ex.module.split('/')[-1]}") for ex in EXERCISES}
KINDS = {  # kind -> (code put first in the function's body, the lines of it a report may name)
    "exception": (["    [][0]  # broken on purpose"], (0,)),
    "endless loop": (["    while True:", "        pass"], (0, 1)),
    "syntax error": (["    broken = (  # never closed"], (0,)),
    "wrong type": (["    return 3.5"], ()),  # no line raised: the report names the function's own line
}
SECONDS = 30


def break_function(code: StudentCode, file: str, function: str, kind: str) -> list[int]:
    """Put the kind's code at the top of `function`'s body; the lines (1-based) a report may name."""
    path = code.path / file
    lines = path.read_text(encoding="utf-8").splitlines()
    node = next(n for n in ast.walk(ast.parse("\n".join(lines))) if isinstance(n, ast.FunctionDef)
                and n.name == function)
    after = node.body[0].end_lineno  # the docstring
    inserted, named = KINDS[kind]
    lines[after:after] = inserted
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return [after + 1 + i for i in named] or [node.lineno]


def check(code: StudentCode, number: int, tmp_path, *extra: str):
    started = time.monotonic()
    result = code.cli("exercise", "check", str(number), "--impl", code.name, "--dir", str(tmp_path / "checks"),
                      *extra, cwd=tmp_path, timeout=SECONDS * 3)
    return result, time.monotonic() - started


def assert_said_at_once(result, function: str, file: str, lines: list[int], kind: str) -> None:
    first = "\n".join(result.stdout.splitlines()[:5])
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr, result.stderr
    assert function in first, first
    assert re.search(rf"{file}:({'|'.join(map(str, lines))})\b", first), (lines, first)
    if kind != "syntax error":  # a file that does not import has no call, hence no inputs
        assert re.search(rf"{function}\([^)]+\)", first), first
    if kind == "endless loop":
        assert "did not return within 1 s" in first
    if kind == "wrong type":
        assert "returned 3.5 of type float, expected" in first


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("number", sorted(BROKEN), ids=lambda n: f"exercise{n}")
def test_a_failing_function_is_named_with_its_inputs_and_line_in_the_first_lines(number, kind, tmp_path):
    function, file = BROKEN[number]
    code = StudentCode(tmp_path)
    lines = break_function(code, file, function, kind)
    result, took = check(code, number, tmp_path)
    assert took < SECONDS, took
    assert_said_at_once(result, function, f"{code.name}/{file}", lines, kind)


def test_the_other_exercises_and_commands_still_work_beside_a_file_that_does_not_import(tmp_path):
    code = StudentCode(tmp_path)
    break_function(code, "high_water_mark.py", "high_water_mark", "syntax error")
    broken, _ = check(code, 1, tmp_path)
    assert broken.stdout.splitlines()[1:] == [  # the header, then two lines: where, and the message
        f"  {code.name}/high_water_mark.py:8: this file does not import, so high_water_mark cannot run",
        "  SyntaxError: '(' was never closed"], broken.stdout
    other, _ = check(code, 2, tmp_path)
    assert other.returncode == 0 and "-- PASSING" in other.stdout, other.stdout + other.stderr
    listing = code.cli("exercise", "list", "--impl", code.name, cwd=tmp_path)
    assert listing.returncode == 0 and "Traceback" not in listing.stderr
    assert [line.split()[-3] for line in listing.stdout.splitlines() if line[:1].isdigit()] == \
        ["0/3", "7/7", "8/8", "3/3", "4/4", "4/4"], listing.stdout


# One of each kind as real node processes: the fault that stopped a node is its exit reason, not "connection lost".
REAL = (("exception", 1), ("endless loop", 3), ("wrong type", 4), ("syntax error", 6))


@pytest.mark.processes
@pytest.mark.parametrize("kind, number", REAL, ids=[f"{k}-exercise{n}" for k, n in REAL])
def test_as_real_processes_the_fault_is_said_at_once_and_the_node_that_stopped_too(kind, number, tmp_path):
    function, file = BROKEN[number]
    code = StudentCode(tmp_path)
    lines = break_function(code, file, function, kind)
    result, took = check(code, number, tmp_path, "--real")
    assert took < SECONDS, took
    assert_said_at_once(result, function, f"{code.name}/{file}", lines, kind)
    assert "connection lost" not in result.stdout
    if kind != "syntax error":  # a file that does not import starts no cluster
        real = result.stdout.split("-- FAILING")[1].split(", real, seed 7)")[1]
        assert re.search(rf"step \d+: node [A-G] stopped: {function}\(", real), result.stdout


@pytest.mark.processes
def test_with_real_processes_a_fault_stops_the_later_runs_and_no_stray_line_reaches_stderr(tmp_path):
    # Exercise 3 raising: its first scenario stops a node on the simulator and as processes; the later scenario and
    # the exploration would stop at the same call, so they are listed as not run, with why, and the diagnosis
    # follows two progress lines, not four. Nothing but progress lines goes to stderr (the supervisor's own
    # warnings, such as a connection reset by the node that stopped, go to the check's log file).
    function, file = BROKEN[3]
    code = StudentCode(tmp_path)
    break_function(code, file, function, "exception")
    result, took = check(code, 3, tmp_path, "--real")
    assert result.returncode == 1 and took < SECONDS * 2, took
    progress = [line for line in result.stderr.splitlines() if line.strip()]
    assert all(line.startswith("... ") for line in progress), result.stderr
    assert [line.split(": scenario ")[1] for line in progress] == ["s1 (generation) on the simulator",
                                                                   "s1 (generation) as real processes"], progress
    assert re.search(r"\[FAIL\] scenario s1 \(generation, real, seed 7\)", result.stdout), result.stdout
    assert f"  [not run] scenario k2 (generation): your {function} failed in the run above, and this run would stop " \
           "at it too: fix it first" in result.stdout, result.stdout
    assert result.stdout.rstrip().splitlines()[-1] == (f"  [not run] explore: your {function} failed above, and every "
                                                       "search would stop at that call: fix it first")


def screen(raw: str) -> list[str]:
    """The lines a terminal shows for `raw` (a carriage return goes back to the line's start, ESC[K erases to its
    end), so that a test sees what the student sees."""
    lines, row, col = [""], 0, 0
    i = 0
    while i < len(raw):
        if raw.startswith("\033[K", i):
            lines[row] = lines[row][:col]
            i += 3
            continue
        char = raw[i]
        if char == "\r":
            col = 0
        elif char == "\n":
            row, col = row + 1, 0
            if row == len(lines):
                lines.append("")
        else:
            lines[row] = lines[row][:col] + char + lines[row][col + 1:]
            col += 1
        i += 1
    return lines


def test_the_screen_reader_itself_overwrites_and_erases():
    assert screen("... a\r\033[K... b\r\033[KHeader\nnext\n") == ["Header", "next", ""]


@pytest.mark.processes
def test_on_a_terminal_the_progress_lines_leave_the_first_lines_to_the_diagnosis(tmp_path):
    import os
    import pty

    function, file = BROKEN[3]
    code = StudentCode(tmp_path)
    lines = break_function(code, file, function, "exception")
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "lab.cli", "exercise", "check", "3", "--impl", code.name, "--dir",
                             str(tmp_path / "checks"), "--real"], cwd=tmp_path, env={**code.env(), "COLUMNS": "200"},
                            stdin=follower, stdout=follower, stderr=follower)
    os.close(follower)
    raw = b""
    try:
        deadline = time.monotonic() + SECONDS * 3
        while time.monotonic() < deadline:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            raw += chunk
        assert proc.wait(30) == 1
    finally:
        proc.kill()
        os.close(leader)
    shown = screen(raw.decode("utf-8", "replace").replace("\r\n", "\n"))
    first = "\n".join(shown[:5])
    assert shown[0].startswith("Exercise 3:"), shown[:8]
    assert f"{code.name}/{file}:" in first and f"{function}(" in first, first
    assert "... exercise 3: scenario" in raw.decode("utf-8", "replace")  # the progress was shown, then cleared


def test_json_carries_the_fault_of_a_rule_and_of_a_scenario(tmp_path):
    code = StudentCode(tmp_path)
    code.edit("follower.py", "    truncate_from = None\n",
              "    truncate_from = None\n    if prev_index == 3:\n        raise KeyError(prev_index)\n")
    result, _ = check(code, 3, tmp_path, "--json")
    report = json.loads(result.stdout)
    assert all(r["fault"] is None for r in report["rules"])  # the rules never reach index 3 with entries held
    fault = report["scenarios"][0]["fault"]
    assert {k: fault[k] for k in ("node", "step", "scenario", "kind", "function", "detail")} == {
        "node": "B", "step": 1, "scenario": "s1", "kind": "raised", "function": "follower_append",
        "detail": "KeyError: 3"}
    assert fault["inputs"].startswith("log(generations=[1, 1, 1]), 3, 1")
    assert fault["file"] == f"{code.name}/follower.py" and fault["line"] == 22
    code.edit("high_water_mark.py", "    majority = ", "    [][0]\n    majority = ")
    result, _ = check(code, 1, tmp_path, "--json")
    rule = json.loads(result.stdout)["rules"][0]
    assert rule["fault"]["inputs"] == "[0]" and rule["fault"]["detail"].startswith("IndexError")
    assert "high_water_mark([0]) raised IndexError" in rule["detail"]


def test_ctrl_c_says_which_call_of_the_students_was_running(tmp_path):
    code = StudentCode(tmp_path)
    lines = break_function(code, "reads.py", "check_read", "endless loop")
    inside = tmp_path / "inside"  # the endless call has begun: it writes this file first (a fixed sleep raced a
    path = code.path / "reads.py"  # loaded machine's start)
    text = path.read_text(encoding="utf-8").replace("    while True:\n", f"    open({str(inside)!r}, 'w').close()\n"
                                                    "    while True:\n", 1)
    path.write_text(text, encoding="utf-8")
    lines = [line + 1 for line in lines]
    proc = subprocess.Popen([sys.executable, "-m", "lab.cli", "exercise", "check", "4", "--impl", code.name,
                             "--limit", "60"], cwd=tmp_path, env=code.env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 50
        while not inside.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert inside.exists(), "the endless call never began"
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 130
    assert re.search(rf"interrupted while check_read\(\d+, \d+\) was running -- {code.name}/reads.py:"
                     rf"({'|'.join(map(str, lines))})$", err.strip()), err
