"""What names a submission and what it may never hold: one definition for `hwm-lab submit` and the grader."""

from __future__ import annotations

import re
import unicodedata

# A student id: letters (of any alphabet: zoë, 李明), digits, '.', '_' and '-', 1 to 64 characters, not starting with
# '.' (no hidden file, no '..', no folder separator: it names the zip, submission-ID.zip, and the grader's files).
# Written in Unicode's composed form (NFC), so that one name is one id whichever keyboard typed it.
MAX_ID = 64
PUNCTUATION = "._-"
# What a run folder of a submission holds: its trace (lab.ports.trace) and its verdict, nothing else.
RUN_FILE = re.compile(r"trace\.json|verdict\.json|events-[A-Za-z0-9_-]{1,32}\.jsonl")
# A running cluster's secrets: the secret its nodes prove they know, and cluster.json with the control API token.
SECRET_FILES = ("secret", "cluster.json")


def student_id(text: str) -> str:
    """The id as the lab keeps it: composed (NFC), so that `zoë` typed as z, o, e and a combining diaeresis is the
    same id as `zoë` typed with its own letter."""
    return unicodedata.normalize("NFC", text)


def valid_student_id(student: object) -> bool:
    """Letters (a letter's combining marks after it), digits, '.', '_' and '-', 1 to 64 characters once composed,
    not starting with '.'; nothing else (no space, no separator, no invisible character, no emoji)."""
    if not isinstance(student, str) or not student or student != student_id(student) or len(student) > MAX_ID:
        return False
    for i, c in enumerate(student):
        kind = unicodedata.category(c)
        if not (kind.startswith("L") or kind == "Nd" or c in PUNCTUATION or (i and kind in ("Mn", "Mc"))):
            return False
    return not student.startswith(".")


def is_secret(path: str) -> bool:
    """Whether a file of a submission is one of a cluster's secrets (by its name, in any folder)."""
    return re.split(r"[/\\]", path)[-1] in SECRET_FILES


def packed(name: str) -> bool:
    """Whether `hwm-lab submit` packs a run's file of this name."""
    return RUN_FILE.fullmatch(name) is not None
