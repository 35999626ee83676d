"""Make the grader's JVM class archive (lab/grade/spark/jvm.py), once: `python -m lab.grade.spark.warm_jvm` grades one submission of
the course's own answers in a JVM that writes the classes it loaded as it exits. .ci/setup runs it."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from lab.grade.spark import edges, job, jvm
from lab.grade.spark.session import spark_session
from lab.grade.outputs.similarity import course_folder


def prepare(folder: Path | None = None, say=print) -> Path:
    """Make the archive (a small grade of the course's own answers, with Java writing the classes it loaded at
    exit), unless it is there already. Returns its path; raises RuntimeError when it cannot be made."""
    target = jvm.archive_path(folder)
    if target is None:
        raise RuntimeError("no Java or no PySpark here: run .ci/setup first")
    if jvm.ready(folder):
        say(f"the grader's JVM class archive is ready: {target}")
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    for left in target.parent.glob(f".{target.name}.*.tmp"):  # of a preparation interrupted before its JVM exited
        left.unlink(missing_ok=True)
    aside = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        with tempfile.TemporaryDirectory(prefix="hwm-lab-jvm-") as work:
            say("preparing the grader's JVM class archive (once; a minute or two): a small grade of the answers")
            _small_grade(Path(work), aside)
        if not aside.is_file() or aside.stat().st_size == 0:
            raise RuntimeError("Java wrote no class archive")
        os.replace(aside, target)
    finally:
        aside.unlink(missing_ok=True)
    say(f"the grader's JVM class archive is ready: {target} ({target.stat().st_size // 2**20} MB)")
    return target


def _small_grade(work: Path, dump_to: Path) -> None:
    """One submission of the course's answers (the exercises in a handout) graded as sent, in a JVM that writes
    the classes it loaded to `dump_to` when it exits; returns once the JVM has exited."""
    impl = "solutions" if course_folder("solutions") is not None else "exercises"
    subs = work / "submissions"
    subs.mkdir()
    made = subprocess.run([sys.executable, "-m", "lab.cli", "submit", "--student", "warmup", "--impl", impl,
                           "--out", str(subs / "warmup.zip"), "--dir", str(work / "checks"), "--lang", "en"],
                          cwd=work, capture_output=True, text=True, timeout=600)
    if not (subs / "warmup.zip").is_file():
        raise RuntimeError(f"hwm-lab submit made no zip (exit {made.returncode}): {made.stderr.strip()[-500:]}")
    out = work / "out"
    args = job.build_parser().parse_args([str(subs), "--out", str(out), "--trust-traces", "--quiet"])
    log = work / "spark.log"
    with edges.jvm_output_to(str(log), True):
        spark = spark_session("local[2]", java_options=jvm.java_options(dump_to=dump_to))
    gateway = spark.sparkContext._gateway
    try:
        code = job.run(args, spark)
    finally:
        spark.stop()
        gateway.shutdown()
        proc = getattr(gateway, "proc", None)
        if proc is not None:  # the JVM exits when its stdin closes, and writes the archive as it exits
            proc.stdin.close()
            proc.wait(timeout=600)
    if code != 0 or not dump_to.is_file():
        tail = log.read_text(errors="replace").strip().splitlines()[-5:] if log.is_file() else []
        raise RuntimeError(f"the small grade failed (exit {code}); its JVM's last lines: " + " | ".join(tail))


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m lab.grade.spark.warm_jvm", description=__doc__.split(":")[0] + ".")
    parser.parse_args(argv)
    try:
        prepare()
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
        print(f"grade: no JVM class archive: {exc} (grades still run; their JVM only starts slower)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
