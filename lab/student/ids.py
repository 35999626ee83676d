"""What names a submission and what it may never hold: one definition for `hwm-lab submit` and the grader."""

from __future__ import annotations

import re

# A student id: letters, digits, '.', '_' and '-', 1 to 64 characters, not starting with '.' (no hidden file, no
# '..', no folder separator: it names the zip, submission-ID.zip).
STUDENT_ID = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}")
# What a run folder of a submission holds: its trace (lab.ports.trace) and its verdict, nothing else.
RUN_FILE = re.compile(r"trace\.json|verdict\.json|events-[A-Za-z0-9_-]{1,32}\.jsonl")
# A running cluster's secrets: the secret its nodes prove they know, and cluster.json with the control API token.
SECRET_FILES = ("secret", "cluster.json")


def valid_student_id(student: object) -> bool:
    return isinstance(student, str) and STUDENT_ID.fullmatch(student) is not None


def is_secret(path: str) -> bool:
    """Whether a file of a submission is one of a cluster's secrets (by its name, in any folder)."""
    return re.split(r"[/\\]", path)[-1] in SECRET_FILES


def packed(name: str) -> bool:
    """Whether `hwm-lab submit` packs a run's file of this name."""
    return RUN_FILE.fullmatch(name) is not None
