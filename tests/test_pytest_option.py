"""The documented test commands work as written: `python -m pytest --impl exercises` (and `--impl solutions`)
read `--impl` as an option on the pytest that the set-up installs, and run the same suite on that code."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def pytest_run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", *args, "-p", "no:cacheprovider"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)


def test_the_documented_commands_take_impl_as_an_option():
    # The README's command, verbatim, collecting only (running it would run this test again).
    for impl in ("exercises", "solutions"):
        result = pytest_run("--impl", impl, "--collect-only", "-q")
        assert result.returncode == 0, result.stdout + result.stderr
        assert "unrecognized arguments" not in result.stderr
        assert "tests collected" in result.stdout and "tests/test_exercises.py" in result.stdout


def test_impl_exercises_gives_one_failure_per_exercise_on_the_handout(request):
    if request.config.getoption("--impl") != "solutions":
        pytest.skip("checks the untouched handout; runs with --impl solutions (a student's exercises/ is not one)")
    result = pytest_run("--impl", "exercises", "-q", "tests/test_exercises.py", "tests/test_high_water_mark.py")
    assert result.returncode == 1, result.stdout + result.stderr
    for number in range(1, 7):
        assert f"test_exercise_keeps_every_rule[exercise{number}]" in result.stdout
        assert f"Exercise {number} (exercises/" in result.stdout and "not started" in result.stdout
    assert "needs exercise 1 (not started)" in result.stdout  # the hypothesis tests wait for exercise 1


def test_impl_solutions_passes_the_same_tests():
    result = pytest_run("--impl", "solutions", "-q", "tests/test_high_water_mark.py")
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_file_that_does_not_import_is_one_failure_and_the_tests_that_need_it_wait(tmp_path):
    from tests.studentcode import StudentCode

    code = StudentCode(tmp_path, name="syntax_error_code")
    code.edit("high_water_mark.py", "    majority = ", "    majority = (\n    broken = ")
    result = subprocess.run([sys.executable, "-m", "pytest", "--impl", code.name, "-q", "-p", "no:cacheprovider",
                             "tests/test_exercises.py", "tests/test_high_water_mark.py"], cwd=ROOT, env=code.env(),
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 1, result.stdout + result.stderr
    failed = [line for line in result.stdout.splitlines() if line.startswith("FAILED")]
    assert len(failed) == 1 and "test_exercise_keeps_every_rule[exercise1]" in failed[0], result.stdout
    assert f"{code.name}/high_water_mark.py:10: this file does not import" in result.stdout
    assert "needs exercise 1 (its file does not import)" in result.stdout
