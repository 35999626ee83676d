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
