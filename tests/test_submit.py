"""`hwm-lab submit`: every exercise checked again on the files as they are, only runs made from those same files,
the files themselves and a manifest in one zip that round-trips; failing work is said plainly, in the exit code too."""

import hashlib
import json
import zipfile
from pathlib import Path

import pytest

from exercises import _MODULES
from lab.core.interface import EXERCISES
from tests.studentcode import StudentCode

ROOT = Path(__file__).resolve().parent.parent


def test_submit_checks_everything_again_and_packs_runs_files_and_a_manifest(tmp_path):
    code = StudentCode(tmp_path)
    checks = tmp_path / "checks"
    result = code.cli("submit", "--student", "s042", "--impl", code.name, "--dir", str(checks), "--out",
                      str(tmp_path / "s.zip"), "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    printed = json.loads(result.stdout)
    with zipfile.ZipFile(tmp_path / "s.zip") as archive:
        names = archive.namelist()
        manifest = json.loads(archive.read("manifest.json"))
        files = {name: archive.read(name) for name in names if name.startswith("files/")}
    assert manifest == printed["manifest"]
    assert manifest["student"] == "s042" and manifest["format"] == "hwm-lab-submission" and manifest["version"] == 2
    assert manifest["exercises"] == [1, 2, 3, 4, 5, 6]
    assert [c["verdict"] for c in manifest["checks"]] == ["passing"] * len(EXERCISES)
    assert all(r["ok"] and r["function"] for c in manifest["checks"] for r in c["rules"])
    # The student's files are in the zip, and every run names the hash of the file it was made from.
    assert sorted(files) == sorted(f"files/{m}" for m in manifest["files_sha256"]) and len(files) == 6
    for path, data in files.items():
        assert manifest["files_sha256"][path[len("files/"):]] == hashlib.sha256(data).hexdigest()
    runs = {r["run"]: r for r in manifest["runs"]}
    assert runs["ex1-n4-generation-sim-seed7"]["scenario"] == "n4" and runs["ex1-n4-generation-sim-seed7"]["passed"]
    for run in manifest["runs"]:
        assert f"{run['dir']}/trace.json" in names and f"{run['dir']}/events-cluster.jsonl" in names
        module = next(iter(run["files_sha256"]))
        assert run["files_sha256"] == {module: manifest["files_sha256"][module]}
    assert all(not n.startswith("/") and ".." not in n for n in names)


@pytest.mark.processes
def test_submit_after_a_reintroduced_bug_says_so_and_leaves_the_stale_real_run_out(tmp_path):
    code = StudentCode(tmp_path)
    checks = tmp_path / "checks"
    result = code.cli("exercise", "check", "4", "--real", "--impl", code.name, "--dir", str(checks), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    real = "ex4-s1-generation-real-seed7"
    assert (checks / real / "trace.json").exists()
    code.edit("reads.py", "if index > high_water_mark:", "if index >= high_water_mark:")  # one too strict
    result = code.cli("submit", "--student", "s7", "--impl", code.name, "--dir", str(checks), "--out",
                      str(tmp_path / "s.zip"), cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    row = next(line for line in lines if line.startswith("4 "))
    assert "FAILING" in row and f"{real}: made from another version of exercises/reads.py" in row
    assert "not passing yet: exercise 4" in result.stdout
    with zipfile.ZipFile(tmp_path / "s.zip") as archive:
        names = archive.namelist()
        manifest = json.loads(archive.read("manifest.json"))
    assert not any(real in name for name in names)
    ex4 = [r for r in manifest["runs"] if r["exercise"] == 4]
    assert [r["source"] for r in ex4] == ["sim"] and not ex4[0]["passed"]
    check4 = manifest["checks"][3]
    assert check4["verdict"] == "failing" and check4["left_out"] == [f"{real}: made from another version of "
                                                                       "exercises/reads.py"]
    assert any(not r["ok"] and r["function"] == "check_read" for r in check4["rules"])


def test_submit_with_no_exercise_started_is_a_clear_error(tmp_path):
    code = StudentCode(tmp_path, name="untouched_handout")  # as handed out, whatever state exercises/ is in
    for function, module in _MODULES.items():
        (code.path / f"{module}.py").write_text("")
    for function, module in _MODULES.items():
        with open(code.path / f"{module}.py", "a", encoding="utf-8") as f:
            f.write(f"def {function}(*args):\n    raise NotImplementedError('exercise: not yet')\n\n\n")
    result = code.cli("submit", "--student", "s1", "--impl", code.name, "--dir", str(tmp_path / "none"),
                      cwd=tmp_path)
    assert result.returncode == 2
    assert "no exercise is started yet" in result.stderr


def test_unknown_exercise_and_argument_are_clear_errors(tmp_path):
    code = StudentCode(tmp_path)
    result = code.cli("exercise", "check", "9", "--impl", "solutions", cwd=tmp_path)
    assert result.returncode == 2 and "no exercise 9" in result.stderr
    result = code.cli("exercise", "list", "--bogus", cwd=tmp_path)
    assert result.returncode == 2 and "unrecognized arguments: --bogus" in result.stderr


@pytest.mark.parametrize("student", ["", "../escaped", ".hidden", "x/y", "a b", "a" * 65])
def test_a_student_id_that_cannot_name_a_zip_safely_is_refused_and_nothing_is_written(student, tmp_path):
    code = StudentCode(tmp_path)
    result = code.cli("submit", "--student", student, "--impl", code.name, "--dir", str(tmp_path / "checks"),
                      cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "is not a valid student id" in result.stderr and "Traceback" not in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [code.name]  # no zip, no folder, no checks run


def test_a_real_runs_secret_and_token_never_go_into_the_submission(tmp_path):
    code = StudentCode(tmp_path)
    checks = tmp_path / "checks"
    run = checks / "ex1-n4-generation-real-seed7"
    run.mkdir(parents=True)
    sha = hashlib.sha256((code.path / "high_water_mark.py").read_bytes()).hexdigest()
    (run / "trace.json").write_text(json.dumps({"format": "hwm-lab-trace", "version": 1, "scenario": "n4",
                                                "truncation": "generation", "seed": 7, "nodes": ["A"],
                                                "files_sha256": {"exercises/high_water_mark.py": sha}}))
    (run / "verdict.json").write_text(json.dumps({"passed": True}))
    (run / "events-cluster.jsonl").write_text("")
    (run / "secret").write_text("0123456789abcdef")
    (run / "cluster.json").write_text(json.dumps({"token": "feedface"}))
    result = code.cli("submit", "--student", "s042", "--impl", code.name, "--dir", str(checks), "--out",
                      str(tmp_path / "s.zip"), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    with zipfile.ZipFile(tmp_path / "s.zip") as archive:
        names = archive.namelist()
        everything = b"".join(archive.read(n) for n in names)
    assert f"runs/{run.name}/trace.json" in names  # the run itself is packed ...
    assert not [n for n in names if n.endswith(("/secret", "/cluster.json"))], names  # ... its secrets are not
    assert b"0123456789abcdef" not in everything and b"feedface" not in everything
