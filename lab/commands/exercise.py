"""`hwm-lab exercise list|check` and `hwm-lab submit`: the student workflow."""

from __future__ import annotations

import hashlib
import json
import sys
import zipfile
from datetime import datetime, timezone
from pathlib import Path

CHECKS_DIR = Path(".hwm-lab") / "checks"


def register(subparsers) -> None:
    exercise = subparsers.add_parser("exercise", help="list the exercises or check one",
                                     description="List the exercises with their status, or check one.")
    sub = exercise.add_subparsers(dest="exercise_command", metavar="ACTION", required=True)
    p = sub.add_parser("list", help="each exercise, its status for your code and what to read")
    p.add_argument("--impl", default="exercises", help="the code to check (default: exercises)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_list)
    p = sub.add_parser("check", help="run an exercise's rules and scenarios against your code; writes traces",
                       description="Run exercise N's rules, then its scenarios on the simulator (and with --real "
                                   "as processes). Traces go to --dir (default .hwm-lab/checks) for hwm-lab submit.")
    p.add_argument("number", type=int, help="exercise number (1 to 6)")
    p.add_argument("--impl", default="exercises", help="the code to check (default: exercises)")
    p.add_argument("--seed", type=int, default=7, help="simulator seed (default 7)")
    p.add_argument("--real", action="store_true", help="also run the scenarios as real processes")
    p.add_argument("--dir", default=str(CHECKS_DIR), help="where to write the traces")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_check)

    p = subparsers.add_parser("submit", help="pack your latest check traces and a manifest into one zip",
                              description="Pack the traces of your latest `hwm-lab exercise check` runs, with a "
                                          "manifest, into a zip for your instructor.")
    p.add_argument("--student", required=True, help="your student id")
    p.add_argument("--out", help="the zip to write (default: submission-STUDENT.zip)")
    p.add_argument("--dir", default=str(CHECKS_DIR), help="where the check traces are")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_submit)


def cmd_list(args) -> int:
    from lab.core import impl as impl_module
    from lab.student.checks import EXERCISES, check_rules

    try:
        impl = impl_module.load(args.impl)
    except impl_module.ImplError as exc:
        print(f"hwm-lab exercise list: {exc}", file=sys.stderr)
        return 2
    rows = []
    for ex in EXERCISES:
        status, rules = check_rules(ex, impl)
        rows.append({"exercise": ex.number, "title": ex.title, "file": ex.module, "status": status,
                     "rules_ok": sum(r.ok for r in rules), "rules": len(rules), "read": ex.read})
    if args.json:
        print(json.dumps(rows))
    else:
        for r in rows:
            print(f"{r['exercise']}. {r['title']:<50} {r['status']:<12} {r['rules_ok']}/{r['rules']} rules   "
                  f"{r['file']}\n     read: {r['read']}")
    return 0


def cmd_check(args) -> int:
    from lab.core import impl as impl_module
    from lab.student.checks import run_check

    def progress(text: str) -> None:
        if not args.json:
            print(f"... {text}", file=sys.stderr, flush=True)

    try:
        report = run_check(args.number, args.impl, out_root=args.dir, seed=args.seed, real=args.real,
                           progress=progress)
    except (ValueError, impl_module.ImplError) as exc:
        print(f"hwm-lab exercise check: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"exercise": args.number, "status": report.status,
                          "rules": [r.__dict__ for r in report.rules], "scenarios": report.scenarios}))
    else:
        print(report.text())
    return 0 if report.status == "passing" else 1


def cmd_submit(args) -> int:
    from lab.student.checks import EXERCISES

    root = Path(args.dir)
    runs = sorted(p for p in root.glob("ex*-*") if (p / "trace.json").exists()) if root.exists() else []
    if not runs:
        print(f"hwm-lab submit: no check traces in {root}; run `hwm-lab exercise check N` first", file=sys.stderr)
        return 2
    out = Path(args.out or f"submission-{args.student}.zip")
    import exercises

    # Hash the student's files wherever the package lives, so submit works from any directory.
    package_dir = Path(exercises.__file__).parent
    files = {}
    for ex in EXERCISES:
        path = package_dir / Path(ex.module).name
        if path.exists():
            files[ex.module] = hashlib.sha256(path.read_bytes()).hexdigest()
    entries = []
    for run in runs:
        meta = json.loads((run / "trace.json").read_text(encoding="utf-8"))
        number = int(run.name.split("-")[0][2:])
        entries.append({"run": run.name, "exercise": number, "scenario": meta.get("scenario"),
                        "seed": meta.get("seed"), "source": meta.get("source"), "dir": f"runs/{run.name}"})
    manifest = {"format": "hwm-lab-submission", "version": 1, "student": args.student,
                "lab_version": _version(), "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "files_sha256": files, "exercises": sorted({e["exercise"] for e in entries}), "runs": entries}
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("manifest.json", json.dumps(manifest, indent=2))
        for run in runs:
            for file in sorted(run.iterdir()):
                if file.is_file():
                    archive.write(file, f"runs/{run.name}/{file.name}")
    if args.json:
        print(json.dumps({"ok": True, "out": str(out), "manifest": manifest}))
    else:
        print(f"wrote {out}: {len(runs)} runs of exercises {', '.join(map(str, manifest['exercises']))}")
    return 0


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("hwm-lab")
    except Exception:
        return "unknown"
