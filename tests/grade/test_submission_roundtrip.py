"""What `hwm-lab submit` packs is what `hwm-lab grade` accepts: the reference answers get full marks."""

import csv
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from lab.grade.spark import job

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]


def cli(*args, cwd):
    result = subprocess.run([sys.executable, "-m", "lab.cli", *args], cwd=cwd, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def test_a_submit_zip_is_graded_with_its_manifest(spark, tmp_path):
    checks = tmp_path / "checks"
    for number in range(1, 7):
        cli("exercise", "check", str(number), "--impl", "solutions", "--dir", str(checks), cwd=tmp_path)
    subs = tmp_path / "subs"
    subs.mkdir()
    printed = json.loads(cli("submit", "--student", "s042", "--impl", "solutions", "--dir", str(checks), "--out",
                             str(subs / "s042.zip"), "--json", cwd=tmp_path).stdout)
    with zipfile.ZipFile(subs / "s042.zip") as archive:
        assert json.loads(archive.read("manifest.json")) == printed["manifest"]

    out = tmp_path / "out"
    args = job.build_parser().parse_args([str(subs), "--out", str(out), "--trust-traces"])
    assert job.run(args, spark) == 0
    rows = list(csv.DictReader((out / "grades.csv").open()))
    assert len(rows) == 1
    row = rows[0]
    assert row["student_id"] == "s042" and row["grading_status"] == "ok"
    assert [row[f"exercise_{n}"] for n in range(1, 7)] == ["10"] * 6 and row["total"] == "60"
    results = json.loads((out / "gradescope" / "s042" / "results.json").read_text())
    assert results["score"] == 60
