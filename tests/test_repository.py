"""The repository as committed: no file carries a merge's conflict markers (a catalogue once did, and its parser
only warned)."""

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARKERS = ("<<<<<<< ", ">>>>>>> ")


def test_no_tracked_file_holds_conflict_markers():
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout.split(b"\0")
    marked = []
    for name in filter(None, files):
        path = ROOT / name.decode()
        if not path.is_file() or path.suffix in (".png", ".jpg", ".zip", ".parquet"):
            continue
        for n, line in enumerate(path.read_bytes().splitlines(), 1):
            if line.startswith(tuple(m.encode() for m in MARKERS)):
                marked.append(f"{name.decode()}:{n}")
    assert len(files) > 100 and marked == []


def test_ci_runs_the_readmes_test_command_verbatim_and_its_packages_are_declared():
    """CI runs `.ci/run`, which must be the README's test command; that command's pytest-xdist is installed by the
    set-up (the test extra), or the command fails on a fresh machine."""
    import re
    import tomllib

    blocks = re.findall(r"```\n(.*?)\n```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S)
    commands = [b for b in blocks if b.startswith("bash .ci/setup && ")]
    assert len(commands) == 2 and "hwm-lab demo" in commands[0], commands  # the README's two set-up commands
    run = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    assert run[-1] == commands[1]
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    if " -n " in commands[1]:
        assert any(r.startswith("pytest-xdist") for r in extras["test"])
