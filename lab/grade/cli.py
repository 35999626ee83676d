"""Registers `hwm-lab grade` and `hwm-lab spark-cluster` with the lab's CLI (lab/cli.py) without importing pyspark."""

from __future__ import annotations


def register(subparsers) -> None:
    from lab.grade.spark import arguments, job

    parser = subparsers.add_parser(
        "grade", help="grade a class's submissions with Spark",
        description="Grade a whole class's HWM Lab submissions with Spark (docs/grading.md).")
    arguments.add_arguments(parser)
    parser.set_defaults(func=job.run)

    from lab.grade.spark import standalone

    standalone.register(subparsers)
