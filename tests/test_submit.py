"""`hwm-lab submit`: the latest check traces and a manifest in one zip that round-trips."""

import json
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "lab.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def test_submit_packs_check_traces_with_a_manifest(tmp_path):
    checks = tmp_path / "checks"
    for number in ("1", "4"):
        result = cli("exercise", "check", number, "--impl", "solutions", "--dir", str(checks), cwd=tmp_path)
        assert result.returncode == 0, result.stdout + result.stderr
    result = cli("submit", "--student", "s042", "--dir", str(checks), "--out", str(tmp_path / "s.zip"), "--json",
                 cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    printed = json.loads(result.stdout)
    with zipfile.ZipFile(tmp_path / "s.zip") as archive:
        names = archive.namelist()
        manifest = json.loads(archive.read("manifest.json"))
    assert manifest == printed["manifest"]
    assert manifest["student"] == "s042" and manifest["format"] == "hwm-lab-submission"
    assert manifest["exercises"] == [1, 4]
    runs = {r["run"]: r for r in manifest["runs"]}
    assert "ex1-n4-generation-sim-seed7" in runs and runs["ex1-n4-generation-sim-seed7"]["scenario"] == "n4"
    for run in manifest["runs"]:
        assert f"{run['dir']}/trace.json" in names and f"{run['dir']}/events-cluster.jsonl" in names
    assert all(not n.startswith("/") and ".." not in n for n in names)
    import hashlib
    stub = (ROOT / "exercises" / "high_water_mark.py").read_bytes()
    assert manifest["files_sha256"]["exercises/high_water_mark.py"] == hashlib.sha256(stub).hexdigest()
    assert len(manifest["files_sha256"]) == 6


def test_submit_without_checks_is_a_clear_error(tmp_path):
    result = cli("submit", "--student", "s1", "--dir", str(tmp_path / "none"), cwd=tmp_path)
    assert result.returncode == 2
    assert "run `hwm-lab exercise check N` first" in result.stderr


def test_unknown_exercise_and_argument_are_clear_errors(tmp_path):
    result = cli("exercise", "check", "9", "--impl", "solutions", cwd=tmp_path)
    assert result.returncode == 2 and "no exercise 9" in result.stderr
    result = cli("exercise", "list", "--bogus", cwd=tmp_path)
    assert result.returncode == 2 and "unrecognized arguments: --bogus" in result.stderr
