"""The files of a supervisor's run: their names, and how they are read and written (atomically, privately)."""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path

from lab.core.guard import Fault
from lab.core.reasons import Reason, reason_from_record
from lab.ports.disk_faults import EXIT_KINDS, EXIT_REASONS
from lab.processes.node import FAULT_FILE

NETWORK_FILE = "network.json"
SECRET_FILE = "secret"  # the cluster's secret, mode 0600: the nodes prove to each other that they know it


def iso(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


def parse_time(text) -> float | None:
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def read_json(path: Path) -> dict | None:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_private(path: Path, data: bytes) -> None:
    """Write a file only its owner can read (mode 0600), atomically."""
    tmp = Path(f"{path}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, data)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def write_json(path: Path, data: dict) -> None:
    tmp = Path(f"{path}.tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def read_fault(node) -> dict | None:
    """The fault of the student's code that stopped this process of the node, if that is why it exited."""
    info = read_json(node.data_dir / FAULT_FILE)
    if not info or info.get("pid") != node.pid:
        return None
    try:
        return Fault(**{k: info[k] for k in ("kind", "function", "inputs", "detail", "file", "line")}).as_dict()
    except (KeyError, TypeError):
        return None


def _last_line(path: Path) -> str:
    """The last line a node logged: on a fail-stop, the exception that stopped it."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - 4096))
            lines = f.read().decode("utf-8", errors="replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1] if lines else ""


def exit_reason(data_dir: Path, code: int | None) -> str:
    """Why a node stopped on its own: the reason it wrote in the space it set aside (a storage fault: its sentence,
    then its kind and values, read back as a Reason), else the last line of its node.log, else what its exit code
    says."""
    try:
        written = (Path(data_dir) / "exit_reason").read_bytes().rstrip(b"\0").decode("utf-8", "replace").strip()
    except OSError:
        written = ""
    if written:
        sentence, _, record = written.partition("\n")
        try:
            reason = reason_from_record(json.loads(record)) if record else None
        except ValueError:
            reason = None
        return reason if reason is not None and str(reason) == sentence else sentence
    line = _last_line(Path(data_dir) / "node.log")
    if code in EXIT_REASONS and EXIT_KINDS[code] not in line:
        return Reason(EXIT_REASONS[code], code=code)
    return line


def tail(path: Path, lines: int = 5) -> str:
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return "(no log)"
    return " | ".join(text[-lines:]) or "(empty log)"

