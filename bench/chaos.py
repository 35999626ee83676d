"""The nemesis as a benchmark: `python bench/chaos.py --nodes 5 --duration 300` is `hwm-lab chaos` (the code, and
what it does, are in lab/harness/chaos.py). `--storage` adds the storage faults (disk-full, fsync-fail: the node
stops with its reason and is restarted after disk-ok): `python bench/chaos.py --nodes 5 --duration 300 --storage`."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lab.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(["chaos", *sys.argv[1:]]))
