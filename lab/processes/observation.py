"""The supervisor's observation: the cluster's state (asked of each node, or read from its disk when it is down),
the cluster's own trace events, and every emitter's events as one numbered stream.

A mixin of `Supervisor` (lab.processes.supervisor), which holds the state it works on.
"""

from __future__ import annotations

import json
import logging
import time

from lab.core.reasons import Reason
from lab.core.messages import Event
from lab.ports import codec
from lab.ports.trace import CLUSTER, parse_line, record
from lab.processes.client import NodeError
from lab.processes.runfiles import exit_reason

log = logging.getLogger("lab.processes.supervisor")

EVENTS_KEPT = 200_000  # /api/events serves this many of the newest events (numbering never restarts)
LIST_SECONDS = 0.5  # how often the run directory is listed for new trace files (a node's first events wait so long)
PAGE_MAX = 5000  # the most events one answer of /api/events carries (ask again from `next` for the rest)


class Observation:
    """What the control API's state and events answer, and the cluster's own lines in the trace."""

    def state(self, log: int | str = 20) -> dict:
        nodes = []
        for name in self.names:
            node = self.nodes[name]
            self._reap(node)
            info = None
            if node.state == "running":
                try:
                    info = self._control(node, "status", timeout=2.0, log=log)
                    node.last = info
                except (OSError, TimeoutError, NodeError, codec.CodecError) as exc:
                    info = {**node.last, "unresponsive": str(exc)}
            if info is None:
                info = dict(node.last)
                info["stale"] = True
                if log != "all":
                    window = info.get("log", [])[-int(log):] if int(log) else []
                    info["log_start"] = window[0][0] if window else info.get("log_end", 0) + 1
                    info["log"] = window
            info.update({"id": name, "state": node.state, "pid": node.pid if node.state != "killed" else None,
                         "host": self.host, "port": node.port, "data_dir": str(node.data_dir), "boot": node.boot,
                         "fsync": self.settings["fsync"][name]})
            if node.state not in ("running", "paused"):
                info.update({"role": None, "leader": None, "match_index": {}, "next_index": {}})
            if node.exit_code is not None and node.state == "exited":
                info["exit_code"] = node.exit_code
                reason = info["exit_reason"] = node.exit_reason or exit_reason(node.data_dir, node.exit_code)
                if isinstance(reason, Reason):  # which reason, for a reader in another language
                    info["exit_because"] = reason.as_record()
                if node.fault:
                    info["fault"] = node.fault
            info["disk_full"] = name in self.full_disks
            for key, default in (("role", None), ("generation", 0), ("leader", None), ("log_end", 0), ("hwm", 0),
                                 ("match_index", {}), ("next_index", {}), ("log", []), ("log_start", 1)):
                info.setdefault(key, default)
            nodes.append(info)
        leaders = [(n["generation"], n["id"]) for n in nodes if n["state"] == "running" and n["role"] == "leader"]
        leader = max(leaders)[1] if leaders else None
        if leader:
            self._leader_hint = leader
        links = [{"src": a, "dst": b, "cut": (a, b) in self.cuts,
                  "delay_ms": self.link_delays.get((a, b), self.settings["delay_ms"])}
                 for a in self.names for b in self.names if a != b]
        return {"run_dir": str(self.run_dir), "settings": self.public_settings(), "leader": leader, "nodes": nodes,
                "links": links, "time": round(time.time() - self.start_time, 6),
                **({"trace_unwritable": self._unwritable} if self._unwritable else {})}

    def node_log(self, name: str) -> list:
        node = self._running(name)
        return self._control(node, "log", timeout=10.0)["entries"]

    def cluster_event(self, kind: str, **fields) -> None:
        """A line of the cluster's own (a fault, a client request, a scenario's note) in the trace, at once."""
        now = time.time() - self.start_time
        with self._trace_lock:
            self._writer.emit([Event(kind, fields)], time=now, boot=0)
            try:
                self._writer.flush()
                self._unwritable = ""
                return
            except OSError as exc:  # a full disk: the cluster goes on, and says what it could not write
                if not self._unwritable:
                    log.warning("cannot write the cluster's trace (%s): its events are kept in memory only", exc)
                self._unwritable = f"the cluster's trace cannot be written: {exc.strerror or exc}"
        line = json.dumps({**record(Event(kind, fields), seq=0, time=round(now, 6), node=CLUSTER, boot=0),
                           "unwritten": True}).encode()
        with self._events_lock:
            self._events.append(line)

    def events(self, after: int = 0, limit: int | None = None) -> tuple[list[bytes], int]:
        """Trace events of every emitter, in the order this supervisor read them, numbered from 1: those after
        number `after` (at most `limit`, and PAGE_MAX, of the newest EVENTS_KEPT; the trace files hold them all),
        each as its JSON text (read once, never decoded again), and the number to ask next."""
        with self._events_lock:
            self._read_traces()
            start = max(0, after, self._events_dropped) - self._events_dropped
            chosen = self._events[start: start + min(limit or PAGE_MAX, PAGE_MAX)]
            return chosen, self._events_dropped + start + len(chosen)

    def events_json(self, after: int = 0, limit: int | None = None) -> bytes:
        """The answer of /api/events, built from the events' own JSON texts: nothing is decoded or encoded again."""
        chosen, following = self.events(after, limit)
        return b'{"events": [' + b", ".join(chosen) + b'], "next": ' + str(following).encode() + b"}"

    def event_dicts(self, after: int = 0) -> list[dict]:
        """Every kept event after number `after`, decoded (for the supervisor's own rare look-ups)."""
        with self._events_lock:
            self._read_traces()
            start = max(0, after, self._events_dropped) - self._events_dropped
            return [parse_line(line) for line in self._events[start:]]

    def close_traces(self) -> None:
        """Close the trace files read so far (the cluster stopped); the events read stay served."""
        with self._events_lock:
            self._read_traces()
            for tail in self._tail.values():
                tail[0].close()

    def _read_traces(self) -> None:
        """Take the whole new lines of every trace file as they are (each checked to be JSON once, kept as bytes:
        no dicts for the garbage collector to walk); keep the newest EVENTS_KEPT. Each file stays open and the
        directory is listed at most every LIST_SECONDS: few system calls, so few waits for the GIL under load.
        Holds the events lock."""
        if time.monotonic() - self._listed >= LIST_SECONDS:
            self._listed = time.monotonic()
            for path in sorted(self.run_dir.glob("events-*.jsonl")):
                if path not in self._tail:
                    try:
                        self._tail[path] = [open(path, "rb"), b""]
                    except OSError:
                        continue
        for path, tail in self._tail.items():
            try:
                data = tail[1] + (tail[0].read() or b"")
            except (OSError, ValueError):  # ValueError: closed, the cluster has stopped
                continue
            end = data.rfind(b"\n") + 1  # only whole lines: a torn or unfinished one waits
            tail[1] = data[end:]
            for line in data[:end].splitlines():
                try:
                    parse_line(line)
                except ValueError:
                    log.warning("%s: skipped a line that is not an event", path.name)
                    continue
                self._events.append(line)
        excess = len(self._events) - EVENTS_KEPT
        if excess > 0:
            del self._events[:excess]
            self._events_dropped += excess
