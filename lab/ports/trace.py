"""Write and read trace directories (docs/trace-format.md): the contract with replay, checks and the grader."""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from lab.core.messages import Event

FORMAT = "hwm-lab-trace"
VERSION = 1
CLUSTER = "cluster"
log = logging.getLogger(__name__)


class TraceError(Exception):
    pass


class TraceWriter:
    """Appends one emitter's events to RUN_DIR/events-<node>.jsonl, numbering them."""

    def __init__(self, run_dir: str | os.PathLike, node: str, *, flush_each: bool = True):
        self.path = Path(run_dir) / f"events-{node}.jsonl"
        self.node = node
        self.seq = _last_seq(self.path)
        self._file = open(self.path, "a", encoding="utf-8")
        self.flush_each = flush_each

    def emit(self, event: Event, *, time: float, boot: int) -> dict:
        fields = dict(event.fields)
        record = {"v": VERSION, "seq": self.seq + 1, "time": round(time, 6), "node": self.node, "boot": boot,
                  "gen": fields.pop("gen", 0), "type": event.type, **fields}
        self.seq += 1
        self._file.write(json.dumps(record, separators=(",", ":")) + "\n")
        if self.flush_each:
            self._file.flush()
        return record

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def _last_seq(path: Path) -> int:
    """Continue numbering after a restart; a torn last line (SIGKILL mid-write) is cut off first."""
    if not path.exists():
        return 0
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        cut = data.rfind(b"\n") + 1
        with open(path, "r+b") as f:
            f.truncate(cut)
        log.warning("%s: removed a torn last line (%d bytes)", path, len(data) - cut)
        data = data[:cut]
    for line in reversed(data.splitlines()):
        try:
            return int(json.loads(line)["seq"])
        except (ValueError, KeyError, TypeError):
            continue
    return 0


def write_meta(run_dir: str | os.PathLike, **meta) -> dict:
    record = {"format": FORMAT, "version": VERSION, **meta}
    path = Path(run_dir) / "trace.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return record


@dataclass
class Trace:
    meta: dict
    events: list[dict]
    warnings: list[str] = field(default_factory=list)

    def of_type(self, *types: str) -> list[dict]:
        return [e for e in self.events if e["type"] in types]


def read_trace(run_dir: str | os.PathLike) -> Trace:
    """Read a trace directory: meta plus every event file merged in (time, node, seq) order."""
    run_dir = Path(run_dir)
    meta_path = run_dir / "trace.json"
    if not meta_path.exists():
        raise TraceError(f"{run_dir} is not a trace directory: trace.json is missing")
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise TraceError(f"{meta_path}: not valid JSON ({exc})") from exc
    if meta.get("format") != FORMAT:
        raise TraceError(f"{meta_path}: not an HWM Lab trace (format {meta.get('format')!r})")
    if int(meta.get("version", 0)) > VERSION:
        raise TraceError(f"{meta_path}: trace format version {meta['version']} is newer than this lab "
                         f"understands ({VERSION}); upgrade hwm-lab")
    events: list[dict] = []
    warnings: list[str] = []
    for path in sorted(run_dir.glob("events-*.jsonl")):
        events.extend(_read_events(path, warnings))
    events.sort(key=lambda e: (e["time"], e["node"], e["seq"]))
    return Trace(meta=meta, events=events, warnings=warnings)


def _read_events(path: Path, warnings: list[str]) -> Iterable[dict]:
    lines = path.read_bytes().split(b"\n")
    last = len(lines) - 1
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            event = json.loads(raw)
            if not isinstance(event, dict) or not {"seq", "time", "node", "type"} <= event.keys():
                raise ValueError("missing fields")
        except ValueError as exc:
            where = "torn last line" if number - 1 == last else f"bad line {number}"
            warnings.append(f"{path.name}: {where} skipped ({exc})")
            continue
        yield event
