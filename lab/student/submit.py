"""`hwm-lab submit`: pack what the student has now into one zip for the instructor (docs/submission-format.md).

Every exercise is checked again on the current files (its rules, and its scenarios on the simulator, which is
fast), so the zip holds traces of the code it holds. A real-process trace from `hwm-lab exercise check N --real`
goes in only if it was made from byte-identical exercise files; any other is left out and the student is told
why. The manifest records, per exercise, the verdict and every rule's result, and per run the hashes of the files
it was made from; the student's exercise files go in the zip too, so the grader can tell a stale run.
"""

from __future__ import annotations

import json
import zipfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from lab.i18n import Listed, columns, counted, localize, say
from lab.student.check_text import STATUS
from lab.student.checks import EXERCISES, files_sha256, package_dir, run_check
from lab.student.ids import packed, student_id, valid_student_id

FORMAT, VERSION = "hwm-lab-submission", 2


class NothingToSubmit(Exception):
    pass


def check_student_id(student: str) -> None:
    """A clear error for an id that could not name a zip safely (or that the grader would refuse)."""
    if not valid_student_id(student_id(student) if isinstance(student, str) else student):
        raise NothingToSubmit(say("{student} is not a valid student id: use letters, digits, '.', '_' and '-', 1 to "
                                  "64 characters, not starting with '.'", student=repr(student)))


@dataclass
class Submission:
    manifest: dict
    out: Path
    table: list[dict] = field(default_factory=list)  # exercise, verdict, runs, left_out
    code: Path | None = None  # the folder of the exercise files checked and packed

    @property
    def complete(self) -> bool:
        return all(row["verdict"] == "passing" for row in self.table)


def submit(student: str, *, impl: str = "exercises", checks_dir: str | Path, out: str | Path, seed: int = 7,
           lab_version: str = "unknown", progress: Callable[[str], None] = lambda s: None) -> Submission:
    student = student_id(student)
    check_student_id(student)
    checks_dir, out = Path(checks_dir), Path(out)
    current = files_sha256(impl)
    checks, runs, table, dirs = [], [], [], []
    for ex in EXERCISES:
        report = run_check(ex.number, impl, out_root=checks_dir, seed=seed, progress=progress, explore=False)
        verdict = report.status
        left_out = []
        ex_runs = [_run_record(Path(s["out"]), s) for s in report.scenarios if s["out"]]  # (a run that waits: none)
        for real in sorted(checks_dir.glob(f"ex{ex.number}-*-real-*")):
            meta = _read_json(real / "trace.json")
            if meta is None:
                continue
            recorded = meta.get("files_sha256")
            if not isinstance(recorded, dict) or ex.module not in recorded:
                left_out.append(say("{run}: {why}", run=real.name, why=say("made before runs recorded their files")))
                continue
            changed = sorted(m for m, digest in recorded.items() if current.get(m) != digest)
            if changed:  # made from other files than these (the exercise's own, or in a handout another's)
                left_out.append(say("{run}: {why}", run=real.name,
                                    why=say("made from another version of {module}", module=changed[0])))
                continue
            wanted = {m: current[m] for m in recorded}
            verdict_file = _read_json(real / "verdict.json") or {}
            scenario = {"scenario": meta.get("scenario"), "truncation": meta.get("truncation"), "source": "real",
                        "seed": meta.get("seed"), "passed": bool(verdict_file.get("passed")),
                        "files_sha256": wanted}
            ex_runs.append(_run_record(real, scenario))
            if verdict == "passing" and not scenario["passed"]:
                verdict = "failing"
        runs.extend(ex_runs)
        dirs.extend(Path(r["path"]) for r in ex_runs)
        checks.append({"exercise": ex.number, "verdict": verdict,
                       "rules": [{"rule": r.rule, "function": r.function, "ok": r.ok} for r in report.rules],
                       "left_out": left_out})
        table.append({"exercise": ex.number, "verdict": verdict, "runs": len(ex_runs), "left_out": left_out})
    if all(row["verdict"] == "not started" for row in table):
        raise NothingToSubmit(say("no exercise is started yet: write one in exercises/, check it with "
                                  "`hwm-lab exercise check N`, then submit"))
    for record in runs:
        del record["path"]
    manifest = {"format": FORMAT, "version": VERSION, "student": student, "lab_version": lab_version,
                "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "files_sha256": current, "exercises": sorted({r["exercise"] for r in runs}),
                "checks": checks, "runs": runs}
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("manifest.json", json.dumps(manifest, indent=2))
        for run in dirs:
            for file in sorted(run.iterdir()):
                if file.is_file() and packed(file.name):  # the trace and verdict: never the cluster's secret
                    archive.write(file, f"runs/{run.name}/{file.name}")
        root = package_dir(impl)
        for module in current:
            archive.write(root / Path(module).name, f"files/{module}")
    return Submission(manifest, out, table, root)


def _run_record(path: Path, scenario: dict) -> dict:
    return {"run": path.name, "exercise": int(path.name.split("-")[0][2:]), "scenario": scenario["scenario"],
            "truncation": scenario["truncation"], "seed": scenario["seed"], "source": scenario["source"],
            "dir": f"runs/{path.name}", "passed": scenario["passed"], "files_sha256": scenario["files_sha256"],
            "path": str(path)}


def _read_json(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def table_text(submission: Submission, lang: str = "en") -> str:
    """The table `hwm-lab submit` prints, in `lang`."""
    def say_in(text) -> str:
        return localize(text, lang)

    rows = [tuple(say_in(w) for w in (say("exercise"), say("verdict"), say("runs"), say("left out")))]
    for row in submission.table:
        verdict = say_in(VERDICTS[row["verdict"]])
        rows.append((str(row["exercise"]), verdict, str(row["runs"]),
                     "; ".join(say_in(why) for why in row["left_out"]) or "-"))
    widths = [max(columns(r[i]) for r in rows) for i in range(3)]
    lines = ["  ".join(c + " " * (w - columns(c)) for c, w in zip(r[:3], widths)) + "  " + r[3] for r in rows]
    failing = [str(r["exercise"]) for r in submission.table if r["verdict"] != "passing"]
    exercises = Listed(map(str, submission.manifest["exercises"]))
    runs = sum(r["runs"] for r in submission.table)
    if submission.code is not None:
        lines.append(say_in(say("checked and packed the files of {folder}", folder=str(submission.code))))
    lines.append(say_in(counted("wrote {out}: {runs} run of exercises {exercises}",
                                "wrote {out}: {runs} runs of exercises {exercises}", runs, out=str(submission.out),
                                runs=runs, exercises=exercises) if exercises else
                        counted("wrote {out}: {runs} run of exercises none", "wrote {out}: {runs} runs of exercises none",
                                runs, out=str(submission.out), runs=runs)))
    if failing:
        lines.append(say_in(say("not passing yet: exercise {exercises} (submitted as it is, for partial credit; exit "
                                "code 1)", exercises=Listed(failing))))
    return "\n".join(lines)


VERDICTS = {"passing": say("passing"), "failing": STATUS["failing"], "not started": STATUS["not started"]}

