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
    assert "needs exercise 1 (not started" in result.stdout  # the hypothesis tests wait for exercise 1


def test_impl_solutions_passes_the_same_tests():
    result = pytest_run("--impl", "solutions", "-q", "tests/test_high_water_mark.py")
    assert result.returncode == 0, result.stdout + result.stderr
