"""Seeds drawn per student from the course secret: each student gets their own simulator runs, the same ones at
every re-grade, and nobody without the secret can tell which seeds they will be."""

from __future__ import annotations

import hashlib
import hmac
import os

SECRET_ENV = "HWM_LAB_COURSE_SECRET"  # the secret itself
SECRET_FILE_ENV = "HWM_LAB_COURSE_SECRET_FILE"  # or a file that holds it
MIN_SECRET_BYTES = 16
SEED_RANGE = 2 ** 31  # simulator seeds are plain non-negative ints


class SecretError(Exception):
    pass


def read_secret(path: str | None = None, environ=os.environ) -> bytes | None:
    """The course secret: from `path`, else $HWM_LAB_COURSE_SECRET_FILE, else $HWM_LAB_COURSE_SECRET; None when
    none is set. Surrounding whitespace is not part of it. Too short a secret is refused: seeds must not be
    guessable."""
    path = path or environ.get(SECRET_FILE_ENV)
    if path:
        try:
            with open(path, "rb") as f:
                secret = f.read().strip()
        except OSError as exc:
            raise SecretError(f"cannot read the course secret {path}: {exc.strerror or exc}") from None
        where = path
    elif environ.get(SECRET_ENV):
        secret, where = environ[SECRET_ENV].strip().encode("utf-8"), f"${SECRET_ENV}"
    else:
        return None
    if len(secret) < MIN_SECRET_BYTES:
        raise SecretError(f"the course secret in {where} is shorter than {MIN_SECRET_BYTES} bytes; make one with "
                          f"`python -c 'import secrets; print(secrets.token_hex(32))' > course.key`")
    return secret


def seeds(secret: bytes, student: str, exercise: int, count: int) -> list[int]:
    """`count` distinct seeds of one student's exercise: HMAC-SHA256(secret, "student|exercise|k")."""
    out: list[int] = []
    k = 0
    while len(out) < count and k < count + 16:
        digest = hmac.new(secret, f"hwm-lab-seed|{student}|{exercise}|{k}".encode("utf-8"), hashlib.sha256).digest()
        seed = int.from_bytes(digest[:8], "big") % SEED_RANGE
        if seed not in out:
            out.append(seed)
        k += 1
    return out
