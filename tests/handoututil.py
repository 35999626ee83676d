"""One handout made by `hwm-lab handout` per test session, shared by the modules that test it, and the students'
variants of it: copies with some exercises written (the reference's answers or a classic mistake), each run as a
fresh machine would run it (no editable install of the course's repository, so no solutions/ importable)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Runs a module as a fresh machine would, in the handout: without the course repository's editable install,
# which would still find solutions/ in the course's checkout.
LAUNCH = ("import sys, runpy\n"
          "sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in repr(f).lower()]\n"
          "sys.path_hooks[:] = [h for h in sys.path_hooks if 'editable' not in repr(h).lower()]\n"
          "sys.argv = sys.argv[1:]\n"
          "runpy.run_module(sys.argv[0], run_name='__main__', alter_sys=True)\n")


def made_handout(tmp_path_factory) -> Path:
    """The session's handout, made once (with its fresh git history) and kept under the session's base folder."""
    out = tmp_path_factory.getbasetemp() / "handout-shared" / "lab"
    if not (out / "README.md").exists():
        if out.exists():
            shutil.rmtree(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        done = subprocess.run([sys.executable, "-m", "lab.cli", "handout", "--out", str(out)], cwd=ROOT,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
    return out


def in_handout(folder, *argv, timeout=300, env=None):
    return subprocess.run([sys.executable, "-c", LAUNCH, *argv], cwd=folder, capture_output=True, text=True,
                          timeout=timeout, env=env)


def variant(made: Path, where: Path, **files: str) -> Path:
    """A copy of the handout with these exercise files written: name -> `solutions` (the reference's file) or the
    file's whole text."""
    copy = where / "lab"
    shutil.copytree(made, copy, ignore=shutil.ignore_patterns(".git", ".hwm-lab", "img", "__pycache__",
                                                               ".hypothesis"))
    for name, text in files.items():
        source = (ROOT / "solutions" / f"{name}.py").read_text(encoding="utf-8") if text == "solutions" else text
        (copy / "exercises" / f"{name}.py").write_text(source, encoding="utf-8")
    return copy


ALL = ("high_water_mark", "leader", "follower", "reads", "wal_truncation", "leader_epoch")


def python_in_handout(folder, code: str, timeout=120):
    """`python -c CODE` in the handout, as a fresh machine runs it (no editable install of the course)."""
    strip = LAUNCH.split("sys.argv")[0]
    return subprocess.run([sys.executable, "-c", strip + code], cwd=folder, capture_output=True, text=True,
                          timeout=timeout)
