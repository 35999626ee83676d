"""How tests/grade/data/baseline was made (kept for the record; the test reads the committed files, never this).

The class: the grader tests' synthetic students (every planted bug, alone and all at once, and bad submissions)
plus simulator traces of the reference answers and of three wrong variants, on scenarios and truncation
strategies that break every check. Its grades.csv and violations.csv were then written by the grading job as it
was before the checks were rewritten for speed (commit 8ffa999), with the rubric of that time (rubric.toml here):

    python tests/grade/data/make_baseline.py tests/grade/data/baseline/submissions
    python -m lab.grade tests/grade/data/baseline/submissions --out OUT --max-file-mb 1 \\
        --rubric tests/grade/data/baseline/rubric.toml
    cp OUT/grades.csv OUT/violations.csv tests/grade/data/baseline/
"""

import json
import shutil
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from lab.harness.scenario import simulate  # noqa: E402  (lab.scenario at commit 8ffa999)
from tests.grade import synth  # noqa: E402
from tests.grade.helpers import full_runs, make_class  # noqa: E402

# (student, implementation, runs as (scenario, truncation, seed))
SIMULATED = [
    ("sim-ref", "solutions", [(s, t, 7) for s in ("s1", "k1", "k2") for t in
                              ("generation", "high-water-mark", "leader-epoch")]
     + [("n4", "generation", 7), ("f8", "leader-epoch", 7), ("l1", "high-water-mark", 7)]),
    ("sim-wex2", "tests.wrong_variants.ex2_no_generation_check",
     [("f8", "generation", 7), ("n4", "generation", 7), ("l1", "generation", 11), ("k1", "high-water-mark", 7)]),
    ("sim-wex3", "tests.wrong_variants.ex3_truncates_matching",
     [("k1", "generation", 7), ("n4", "leader-epoch", 7), ("f8", "generation", 11)]),
    ("sim-wex4", "tests.wrong_variants.ex4_serves_above_hwm",
     [("s1", "generation", 7), ("n4", "generation", 7), ("f8", "leader-epoch", 7), ("k2", "high-water-mark", 7)]),
]


def main(root: Path) -> None:
    shutil.rmtree(root, ignore_errors=True)
    make_class(root)
    synth.write_submission(root, "quinn", full_runs(frozenset({"diverge"})))
    synth.write_submission(root, "rita", full_runs(frozenset({"short-log"})))
    synth.write_submission(root, "zara", full_runs(frozenset(synth.BUGS)))
    for student, impl, plan in SIMULATED:
        tmp = root.parent / f"_tmp_{student}"
        shutil.rmtree(tmp, ignore_errors=True)
        runs = []
        for i, (scenario, truncation, seed) in enumerate(plan):
            name = f"{scenario}-{truncation}-seed{seed}"
            simulate(scenario, seed=seed, truncation=truncation, impl=impl, out=tmp / "runs" / name)
            runs.append({"run": name, "exercise": i % 6 + 1, "scenario": scenario, "seed": seed, "source": "sim",
                         "dir": f"runs/{name}"})
        manifest = {"format": "hwm-lab-submission", "version": 1, "student": student, "lab_version": "0.1.0",
                    "created": "2026-11-22T10:00:00Z", "files_sha256": {}, "exercises": [1, 2, 3, 4, 5, 6],
                    "runs": runs}
        with zipfile.ZipFile(root / f"{student}.zip", "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("manifest.json", json.dumps(manifest, indent=2))
            for path in sorted((tmp / "runs").rglob("*")):
                if path.is_file():
                    z.write(path, str(path.relative_to(tmp)))
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
