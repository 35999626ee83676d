"""The smaller edges of the student's workflow: `| head` ends quietly, a check run from any folder writes its
traces beside the code (and git ignores them there), `exercise list` keeps its columns in every language, and a
bad --limit is a usage error."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from lab import i18n
from tests.studentcode import ROOT, StudentCode


def test_exercise_list_into_a_pipe_that_closes_early_ends_without_a_traceback():
    result = subprocess.run(f'"{sys.executable}" -m lab.cli exercise list | head -1', shell=True, cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    assert result.stdout.startswith("1. ") and result.stdout.count("\n") == 1
    assert "Traceback" not in result.stderr and "BrokenPipeError" not in result.stderr, result.stderr


def test_a_check_run_from_another_folder_writes_beside_the_code_and_leaves_nothing_there(tmp_path):
    code = StudentCode(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = code.cli("exercise", "check", "4", "--impl", code.name, cwd=elsewhere)
    assert result.returncode == 0, result.stdout + result.stderr
    assert list(elsewhere.iterdir()) == []
    assert (tmp_path / ".hwm-lab" / "checks" / "ex4-s1-generation-sim-seed7" / "trace.json").is_file()


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="needs a git checkout")
def test_git_ignores_a_hwm_lab_folder_wherever_it_is():
    for path in (".hwm-lab/checks/x", "exercises/.hwm-lab/checks/x"):
        result = subprocess.run(["git", "check-ignore", "-q", "--no-index", path], cwd=ROOT)
        assert result.returncode == 0, f"{path} is not ignored"


@pytest.mark.parametrize("lang", sorted(i18n.LANGUAGES))
def test_exercise_list_keeps_its_columns_in_every_language(lang):
    result = subprocess.run([sys.executable, "-m", "lab.cli", "exercise", "list", "--lang", lang], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if line[:1].isdigit()]
    assert len(rows) == 6
    # Where the file column starts, in terminal columns (a CJK character takes two): the same on every row.
    starts = {i18n.columns(row[: row.index("exercises/")]) for row in rows}
    assert len(starts) == 1, result.stdout


@pytest.mark.parametrize("limit", ["0", "-1", "abc", "1e9"])
def test_a_bad_limit_is_a_usage_error(limit):
    result = subprocess.run([sys.executable, "-m", "lab.cli", "exercise", "check", "1", "--limit", limit], cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "write the limit as seconds from 0.01 to 600" in result.stderr
