"""The grade's command line: every option of `hwm-lab grade`, `python -m lab.grade` and the job under
`spark-submit`, added to a parser the caller makes (lab/grade/cli.py's subcommand, job.build_parser's own).
Pure argparse: reading them imports neither pyspark nor the rest of the job."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("submissions", metavar="SUBMISSIONS", nargs="?",
                        help="folder of submission zips (from `hwm-lab submit`) or unpacked submission folders, or "
                             "of a class in one zip (a zip of zips; Canvas's, Moodle's or Gradescope's bulk "
                             "download); a local path or any URI Spark reads (hdfs://, s3a://, file://)")
    parser.add_argument("--out", metavar="DIR",
                        help="output folder (created; the grader writes nowhere else); required with SUBMISSIONS")
    parser.add_argument("--master", default=None, metavar="URL",
                        help="Spark master: local[*] (default), local[N], spark://HOST:PORT (to practise on one "
                             "machine: `hwm-lab spark-cluster up`); under `spark-submit` the master given to "
                             "`spark-submit` is used")
    parser.add_argument("--rubric", metavar="FILE", help="rubric TOML (default: the one shipped, see docs/grading.md)")
    parser.add_argument("--shuffle-partitions", type=int, default=None, metavar="N",
                        help="partitions of the events (default: the cores of local mode, twice the cluster's "
                             "cores on a cluster); each holds whole runs")
    parser.add_argument("--driver-memory", default="2g", metavar="SIZE",
                        help="memory of the driver JVM when this command starts it (default 2g)")
    parser.add_argument("--max-file-mb", type=float, default=128, metavar="MB",
                        help="largest events file accepted (default 128)")
    parser.add_argument("--max-submission-mb", type=float, default=1024, metavar="MB",
                        help="largest submission accepted, uncompressed (default 1024)")
    parser.add_argument("--keep-staging", action="store_true",
                        help="keep DIR/_staging (the extracted events and per-check results) for inspection")
    parser.add_argument("--course-secret", metavar="FILE",
                        help="the course secret, kept outside the repository (or $HWM_LAB_COURSE_SECRET_FILE, "
                             "$HWM_LAB_COURSE_SECRET): the grader re-executes every submission's code in a sandbox, "
                             "with seeds drawn per student; without it the grader refuses, unless --trust-traces")
    parser.add_argument("--trust-traces", action="store_true",
                        help="grade without a course secret: the submitted runs as sent, nothing re-executed (a "
                             "student can send runs made from other code; for practice, or a class you trust)")
    parser.add_argument("--unsandboxed", action="store_true",
                        help="re-execute even where bubblewrap is missing, with rlimits only (docs/security.md)")
    parser.add_argument("--check-sandbox", action="store_true",
                        help="prove the sandbox on this machine and exit: the lab's escape attempts in a student's "
                             "sandbox, one line each, and the reference re-executed once (exit 0 if all held, 2 if "
                             "not); every grade that re-executes does this first")
    parser.add_argument("--unsafe-sandbox", action="store_true",
                        help="grade even if a probe of the sandbox did not hold (report.html says so)")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    parser.add_argument("--force", action="store_true",
                        help="empty DIR first even if it holds files the grader did not write")
    parser.add_argument("--lms", choices=("canvas", "moodle"), default=None,
                        help="also write DIR/lms/<lms>.csv, that LMS's gradebook import file (docs/grading.md)")
    parser.add_argument("--lms-map", metavar="FILE",
                        help="CSV student_id,lms_id[,name][,section]: the id each student has in the LMS "
                             "(default: the student ids themselves)")
    return parser
