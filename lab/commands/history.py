"""`hwm-lab history DIR`: the clients' history of a run (lab/harness/history.py): every client operation with its
interval, each read served, refused or stale, each session's read-your-writes and monotonic reads, and whether the
history is linearizable. DIR is a trace directory, a folder of them (a submission unpacked), or a submission's zip."""

from __future__ import annotations

import json
import os
import sys
import zipfile
from pathlib import Path

from lab.commands.options import lang_of, lang_option
from lab.harness.history import DIRTY, check, read_events, trace_dirs
from lab.i18n import complaint, localize, say
from lab.i18n.history import report
from lab.i18n.intervals import intervals_svg
from lab.ports.trace import TraceError, parse_line

BIG_TRACE = 20 << 20  # bytes of events from which reading a trace is said first (it takes seconds)
MOST_UNPACKED = 1 << 30  # a zip's events files, uncompressed, read at most (a bomb is refused, not read)


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "history", help="check the clients' history of a run: stale reads, sessions, linearizability",
        description="The clients' history of a run: every client operation with its interval in time and the node "
                    "that answered, each read served, refused or stale, each session's read-your-writes and monotonic "
                    "reads, and whether the history is linearizable (a register per log index). Exit 1 if a history "
                    "is not linearizable or a read was served above its node's mark, 2 if DIR holds no trace.")
    parser.add_argument("dir", metavar="DIR", help="a trace directory, a folder of them, or a submission's zip")
    parser.add_argument("--svg", metavar="FILE", help="draw the operations as intervals on a time axis, stale reads "
                                                      "marked (one run)")
    parser.add_argument("--budget", type=int, default=1_000_000, metavar="STEPS",
                        help="steps the linearizability search may take per index (default 1000000)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    lang_option(parser)
    parser.set_defaults(func=run)


def run(args) -> int:
    lang = lang_of(args)
    if args.budget < 1:
        print(complaint("hwm-lab history", say("--budget must be a whole number from 1, not {value}",
                                                value=args.budget), lang), file=sys.stderr)
        return 2
    try:
        runs = _runs(Path(args.dir), lang)
    except (TraceError, OSError, zipfile.BadZipFile, ValueError) as exc:
        print(complaint("hwm-lab history", exc.args[0] if exc.args else exc, lang), file=sys.stderr)
        return 2
    if not runs:
        print(complaint("hwm-lab history", say("no trace in {dir}: give a run's directory (it holds trace.json), a "
                                                "folder of them or a submission's zip", dir=args.dir), lang),
              file=sys.stderr)
        return 2
    if args.svg and len(runs) != 1:
        print(complaint("hwm-lab history", say("--svg draws one run, and {dir} holds {count}", dir=args.dir,
                                                count=len(runs)), lang), file=sys.stderr)
        return 2
    found = [(name, check(events, args.budget)) for name, events in runs]
    if args.svg:
        _write(Path(args.svg), intervals_svg(found[0][1], lang=lang, title=found[0][0]))
    if args.json:
        print(json.dumps({"runs": [h.as_dict(name) for name, h in found]}))
    else:
        print("\n\n".join(localize(report(h, name), lang) for name, h in found))
        if args.svg:
            print(localize(say("intervals drawn in {file}", file=args.svg), lang))
    bad = any(h.linearizable is False or h.of_verdict(DIRTY) for _, h in found)
    return 1 if bad else 0


def _runs(root: Path, lang: str) -> list[tuple[str, list[dict]]]:
    """(name, events) of each run DIR holds."""
    if root.is_file() and zipfile.is_zipfile(root):
        return _zip_runs(root)
    if not root.exists():
        raise ValueError(say("{dir} does not exist", dir=str(root)))
    runs = []
    for path in trace_dirs(root):
        if sum(p.stat().st_size for p in path.glob("events-*.jsonl")) > BIG_TRACE:
            print(localize(say("reading the trace of {run} (a large one: some seconds)", run=path.name), lang),
                  file=sys.stderr, flush=True)
        meta, events = read_events(path)
        runs.append((str(meta.get("run") or path.name), events))
    return runs


def _zip_runs(path: Path) -> list[tuple[str, list[dict]]]:
    """The runs of a submission's zip (runs/NAME/events-*.jsonl), read in memory: nothing is unpacked to disk."""
    runs: dict[str, list[dict]] = {}
    with zipfile.ZipFile(path) as zf:
        members = [i for i in zf.infolist() if not i.is_dir() and Path(i.filename).name.startswith("events-")
                   and i.filename.endswith(".jsonl")]
        if sum(i.file_size for i in members) > MOST_UNPACKED:
            raise ValueError(say("{file} unpacks to more than {most} MiB of events: not read", file=str(path),
                                 most=MOST_UNPACKED >> 20))
        for info in sorted(members, key=lambda i: i.filename):
            name = Path(info.filename).parent.name or path.stem
            with zf.open(info) as f:
                for line in f:
                    try:
                        runs.setdefault(name, []).append(parse_line(line))
                    except ValueError:
                        continue  # a torn line, as the trace reader skips it
    return sorted(runs.items())


def _write(out: Path, text: str) -> None:
    """Written aside first: an interrupted command leaves what was there."""
    out.parent.mkdir(parents=True, exist_ok=True)
    aside = out.with_name(f".{out.name}.{os.getpid()}.part")
    try:
        aside.write_text(text, encoding="utf-8")
        os.replace(aside, out)
    finally:
        aside.unlink(missing_ok=True)
