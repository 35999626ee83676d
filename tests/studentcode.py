"""A student's code for tests: a copy of the reference answers as a package of its own, in which a test can put
a classic mistake, then check, submit and grade it with the lab's own commands."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class StudentCode:
    def __init__(self, where: Path, name: str = "student_code"):
        self.root = Path(where)
        self.name = name
        self.path = self.root / name
        shutil.copytree(ROOT / "solutions", self.path, ignore=shutil.ignore_patterns("__pycache__"))
        # The handout's package file, as a student has it: each exercise's file is imported on first use.
        shutil.copy(ROOT / "exercises" / "__init__.py", self.path / "__init__.py")

    def edit(self, file: str, old: str, new: str) -> None:
        """Replace `old` (which must occur exactly once) by `new` in one of the package's files."""
        path = self.path / file
        text = path.read_text(encoding="utf-8")
        assert text.count(old) == 1, f"{file}: {old!r} occurs {text.count(old)} times"
        path.write_text(text.replace(old, new), encoding="utf-8")

    def env(self) -> dict:
        return {**os.environ, "PYTHONPATH": os.pathsep.join([str(self.root), str(ROOT)])}

    def cli(self, *args: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
        """`hwm-lab ARGS` with this package importable, as a student's shell would run it."""
        return subprocess.run([sys.executable, "-m", "lab.cli", *args], cwd=cwd, env=self.env(),
                              capture_output=True, text=True, timeout=timeout)
