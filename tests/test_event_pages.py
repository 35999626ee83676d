"""The supervisor's /api/events: each trace line decoded once and kept as its JSON text, answered in bounded
pages, with no event lost or served twice across pages (no node processes: the trace files are written here)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from lab.processes import control_api, observation
from lab.processes.client import ControlClient
from lab.processes.observation import PAGE_MAX, Observation


class Events(Observation):
    """Only what the supervisor's event path reads: its run directory and the kept events."""

    def __init__(self, run_dir: Path):
        self.run_dir = run_dir
        self.stopped = False
        self._events_lock = threading.Lock()
        self._events: list[bytes] = []
        self._events_dropped = 0
        self._tail: dict = {}
        self._listed = float("-inf")


def write_lines(run_dir: Path, node: str, start: int, count: int, tail: bytes = b"") -> list[dict]:
    events = [{"v": 1, "seq": seq, "time": seq / 1000, "node": node, "boot": 1, "gen": 1,
               "type": "replication_sent", "to": "B", "payload": f"e{seq} \"quoted\" ✓"}
              for seq in range(start, start + count)]
    with open(run_dir / f"events-{node}.jsonl", "ab") as f:
        f.write(b"".join(json.dumps(e).encode() + b"\n" for e in events) + tail)
    return events


def read_pages(source, after: int = 0, limit: int | None = None) -> tuple[list[dict], list[int], int]:
    """Page through to the end as a client does: the events, each page's size, and the number to ask next."""
    got, sizes = [], []
    for _ in range(1000):
        page = json.loads(source.events_json(after, limit))
        sizes.append(len(page["events"]))
        got.extend(page["events"])
        if not page["events"]:
            return got, sizes, page["next"]
        after = page["next"]
    raise AssertionError("paging never reached the end")


def test_pages_are_bounded_and_lose_or_repeat_no_event(tmp_path):
    source = Events(tmp_path)
    made = write_lines(tmp_path, "A", 1, 7000) + write_lines(tmp_path, "B", 1, 6001)
    got, sizes, following = read_pages(source)
    assert max(sizes) == PAGE_MAX and sizes[:3] == [PAGE_MAX, PAGE_MAX, 13001 - 2 * PAGE_MAX]
    assert got == made and following == 13001  # every event once, in the order read, numbered from 1
    # asked with a smaller limit, or from the middle, the pages still join up exactly
    assert read_pages(source, limit=999)[0] == made
    assert read_pages(source, after=6998, limit=301)[0] == made[6998:]
    assert json.loads(source.events_json(13001)) == {"events": [], "next": 13001}
    write_lines(tmp_path, "A", 7001, 2)
    source.close_traces()  # the cluster stopped: what was written before is read, and everything stays served
    got = read_pages(source)[0]
    assert got[:13001] == made and [e["seq"] for e in got[13001:]] == [7001, 7002]


def test_each_line_is_decoded_once_and_never_encoded_again(tmp_path, monkeypatch):
    source = Events(tmp_path)
    made = write_lines(tmp_path, "A", 1, 300, tail=b"not json\n[1, 2]\n" + b'{"v": 1, "seq": 301')  # torn tail
    decoded, encoded = [], []
    real_loads, real_dumps = json.loads, json.dumps
    monkeypatch.setattr(observation.json, "loads", lambda s, *a, **k: decoded.append(s) or real_loads(s, *a, **k))
    monkeypatch.setattr(observation.json, "dumps", lambda o, *a, **k: encoded.append(o) or real_dumps(o, *a, **k))
    pages = [source.events_json(after, 100) for after in (0, 100, 200, 0, 150, 300)]
    assert len(decoded) == 302 and not encoded  # 300 events and the two bad lines, each once; the torn one waits
    monkeypatch.undo()
    assert [e for p in pages[:3] for e in json.loads(p)["events"]] == made
    assert json.loads(pages[4])["events"] == made[150:250] and json.loads(pages[5])["events"] == []
    with open(tmp_path / "events-A.jsonl", "ab") as f:  # the torn line ends: it is served, once
        f.write(b', "time": 0.302, "node": "A", "type": "late"}\n')
    assert [e["seq"] for e in json.loads(source.events_json(300))["events"]] == [301]


def test_numbering_goes_on_past_the_events_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(observation, "EVENTS_KEPT", 1000)
    source = Events(tmp_path)
    made = write_lines(tmp_path, "A", 1, 2500)
    source.events_json(0, 1)
    page = json.loads(source.events_json(0, 10))  # the first 1,500 are gone: served from number 1,501 on
    assert page["events"] == made[1500:1510] and page["next"] == 1510
    assert read_pages(source, after=1500)[0] == made[1500:]


@pytest.fixture
def served(tmp_path):
    source = Events(tmp_path)
    server = control_api.serve(source)
    try:
        yield source, ControlClient(f"http://127.0.0.1:{server.server_address[1]}")
    finally:
        server.shutdown()
        server.server_close()


def test_the_control_api_serves_the_pages(served, tmp_path):
    source, api = served
    made = write_lines(tmp_path, "A", 1, 6000)
    first = api.events(after=0)  # no limit asked: one page of at most PAGE_MAX
    assert len(first["events"]) == PAGE_MAX and first["next"] == PAGE_MAX
    assert api.events(after=10, limit=100_000)["events"] == made[10:10 + PAGE_MAX]
    assert api.all_events() == made


def test_a_burst_of_connections_is_queued_not_dropped(served, tmp_path):
    """With the default listen queue of 5, connections past it waited a whole second (the kernel's SYN retry):
    /api/events took 1 s at p99 under 16 writers. 64 opened at once all connect at once, and are all answered."""
    import socket
    import time

    source, api = served
    write_lines(tmp_path, "A", 1, 10)
    sockets, connects = [], []
    for _ in range(64):  # a connection the kernel dropped from the queue takes a second to connect
        started = time.monotonic()
        sockets.append(socket.create_connection((api.host, api.port), timeout=5))
        connects.append(time.monotonic() - started)
    try:
        for s in sockets:
            s.sendall(b"GET /api/events?after=9 HTTP/1.0\r\nHost: 127.0.0.1:%d\r\n\r\n" % api.port)
        answers = [s.makefile("rb").read() for s in sockets]
    finally:
        for s in sockets:
            s.close()
    assert all(a.startswith(b"HTTP/1.0 200") and b'"next": 10' in a for a in answers)
    assert max(connects) < 0.9
