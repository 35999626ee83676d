"""The catalogue of classic student mistakes: each one, applied to the reference answers, is caught by
`hwm-lab exercise check N` (which exits non-zero naming the exercise) and costs points for exercise N in a
`hwm-lab grade` of the submission made from that code (Spark, in the same test session)."""

from __future__ import annotations

import csv
import json
import re
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.studentcode import StudentCode


@dataclass(frozen=True)
class Mistake:
    id: str
    exercise: int
    what: str
    file: str
    old: str
    new: str


MISTAKES = (
    Mistake("article-majority", 1, "the article's sorted(...)[n // 2]: right for odd cluster sizes only (N4)",
            "high_water_mark.py", "    return sorted(match_indexes, reverse=True)[majority - 1]",
            "    return sorted(match_indexes)[len(match_indexes) // 2]"),
    Mistake("no-majority", 1, "the largest match index: committed as soon as the leader holds it",
            "high_water_mark.py", "    return sorted(match_indexes, reverse=True)[majority - 1]",
            "    return max(match_indexes)"),
    Mistake("figure-8", 2, "commits an older generation's entry by counting replicas (Raft figure 8)",
            "leader.py", "if candidate > current_hwm and generation_at(candidate) == generation:",
            "if candidate > current_hwm:"),
    Mistake("no-truncation", 3, "appends without truncating the conflicting suffix", "follower.py",
            "            if log.generation_at(entry.index) == entry.generation:\n"
            "                continue  # already held: appends are idempotent\n",
            "            continue  # (the mistake: whatever is held at this index is kept)\n"),
    Mistake("gate-too-strict", 4, "the read gate one too strict: refuses the entry at the HWM", "reads.py",
            "    if index > high_water_mark:", "    if index >= high_water_mark:"),
    Mistake("gate-too-loose", 4, "the read gate one too loose: serves the entry just above the HWM", "reads.py",
            "    if index > high_water_mark:", "    if index > high_water_mark + 1:"),
    Mistake("keeps-later-segments", 5, "WAL truncation that cuts the segment but keeps the later ones",
            "wal_truncation.py", "            delete.append(segment.path)", "            pass"),
    Mistake("epoch-follower-off-by-one", 6, "the follower truncates from the leader's end: one entry too early",
            "leader_epoch.py", "        return end_index + 1", "        return end_index"),
    Mistake("epoch-leader-off-by-one", 6, "the leader answers one index before the end of the asked generation",
            "leader_epoch.py", "while index > 0 and log.generation_at(index) > of_generation:",
            "while index > 0 and log.generation_at(index) >= of_generation:"),
)


@pytest.mark.parametrize("mistake", MISTAKES, ids=lambda m: m.id)
def test_the_check_catches_the_mistake_and_names_its_exercise(mistake, tmp_path):
    code = StudentCode(tmp_path)
    code.edit(mistake.file, mistake.old, mistake.new)
    result = code.cli("exercise", "check", str(mistake.exercise), "--impl", code.name, "--dir",
                      str(tmp_path / "checks"), cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"Exercise {mistake.exercise}:" in result.stdout and "-- FAILING" in result.stdout
    assert "[BROKEN]" in result.stdout or "[FAIL] scenario" in result.stdout


# Answers that are safe but never advance: each keeps every safety rule by never committing (or serving) anything.
IDLE = (
    Mistake("idle-min", 1, "the smallest match index: the HWM never passes the slowest node", "high_water_mark.py",
            "    return sorted(match_indexes, reverse=True)[majority - 1]", "    return min(match_indexes)"),
    Mistake("idle-constant", 1, "a constant HWM", "high_water_mark.py",
            "    return sorted(match_indexes, reverse=True)[majority - 1]", "    return 2"),
    Mistake("idle-leader", 2, "the leader records the match indexes but never moves its HWM", "leader.py",
            "    if candidate > current_hwm and generation_at(candidate) == generation:\n        return candidate\n",
            ""),
    Mistake("idle-follower", 3, "the follower refuses every request", "follower.py",
            "    if prev_index > log.log_end:\n", "    if True:\n"),
    Mistake("idle-reads", 4, "every read refused", "reads.py", "    if index < 1:", "    if True:"),
)


def legacy_rubric(folder: Path) -> Path:
    """The default rubric as it was before runs had to advance and before K2's skip named its index: no
    `progress` lines, and K2 skipping its checks on the whole run."""
    from lab.grade import rubric

    text = rubric.default_text()
    legacy = re.sub(r"^progress = .*\n", "", text, flags=re.M).replace("index = 2\n", "")
    assert legacy.count("\n") == text.count("\n") - 7
    (folder / "legacy.toml").write_text(legacy)
    return folder / "legacy.toml"


@pytest.mark.spark
def test_every_mistake_costs_points_in_the_spark_grade_even_with_a_manifest_that_claims_a_pass(spark, tmp_path):
    """... at least what it cost before idle runs lost their points, and an idle answer earns at most 3 of 10."""
    from lab import cli

    subs = tmp_path / "subs"
    subs.mkdir()
    students = {"reference": None, **{m.id: m for m in (*MISTAKES, *IDLE)}}

    def submit(student: str):
        mistake = students[student]
        code = StudentCode(tmp_path / student)
        if mistake is not None:
            code.edit(mistake.file, mistake.old, mistake.new)
        return code.cli("submit", "--student", student, "--impl", code.name, "--dir",
                        str(tmp_path / student / "checks"), "--out", str(subs / f"{student}.zip"),
                        cwd=tmp_path / student)
    # Each student's `hwm-lab submit` in its own folder, two at a time (one per core of a small machine)
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = dict(zip(students, pool.map(submit, students)))
    for student, mistake in students.items():
        result = results[student]
        assert result.returncode == (0 if mistake is None else 1), result.stdout + result.stderr
        if mistake is not None:
            claim_a_pass(subs / f"{student}.zip")

    def grade(out: str, *rubric) -> dict:
        # `hwm-lab grade` as the lab's CLI parses it, run in the suite's Spark session (one JVM fewer to start)
        args = cli.build_parser().parse_args(["grade", str(subs), "--out", str(tmp_path / out), "--trust-traces",
                                              *rubric])
        assert args.func(args, spark) == 0
        return {row["student_id"]: row for row in csv.DictReader((tmp_path / out / "grades.csv").open())}
    grades = grade("out")
    before = grade("legacy", "--rubric", str(legacy_rubric(tmp_path)))
    reference = grades["reference"]
    assert reference == {**before["reference"]} and reference["total"] == "60"
    for mistake in MISTAKES:
        column = f"exercise_{mistake.exercise}"
        assert float(grades[mistake.id][column]) < float(reference[column]), (mistake.id, grades[mistake.id])
        assert float(grades[mistake.id][column]) <= float(before[mistake.id][column]), (mistake.id, before[mistake.id])
    for idle in IDLE:
        column = f"exercise_{idle.exercise}"
        assert float(grades[idle.id][column]) <= 3 < float(before[idle.id][column]), (idle.id, before[idle.id])
        others = [grades[idle.id][f"exercise_{n}"] for n in range(1, 7) if n != idle.exercise]
        assert others == ["10"] * 5, (idle.id, grades[idle.id])


def claim_a_pass(zipped: Path) -> None:
    """Edit a submission's manifest to claim that every rule held and every run passed (the traces stay)."""
    with zipfile.ZipFile(zipped) as archive:
        files = {name: archive.read(name) for name in archive.namelist()}
    manifest = json.loads(files["manifest.json"])
    for check in manifest["checks"]:
        check["verdict"] = "passing"
        for rule in check["rules"]:
            rule["ok"] = True
    for run in manifest["runs"]:
        run["passed"] = True
    files["manifest.json"] = json.dumps(manifest).encode()
    with zipfile.ZipFile(zipped, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
