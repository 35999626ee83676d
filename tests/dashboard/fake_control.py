"""A stand-in for the supervisor's control API (docs/control-api.md) backed by the seeded simulator.

It serves the documented endpoints on 127.0.0.1 from a `lab.sim.cluster.SimCluster`, records every POST, and can
tick the simulator in real time (auto_tick) or leave time to the test. Used to test the dashboard without
node processes.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from lab.ports import codec
from lab.sim.cluster import SimCluster


def refused(answer) -> dict:
    """A refusal as the supervisor's control API gives it: the error, and its reason's kind and values."""
    data = codec.answer_to_json(answer)
    return {"ok": False, "error": data["error"], **({"because": data["because"]} if "because" in data else {})}


class FakeControl:
    def __init__(self, nodes: int = 3, *, seed: int = 1, auto_tick: bool = False, tick_seconds: float = 0.01,
                 trace_dir=None):
        self.sim = SimCluster(nodes, seed=seed, trace_dir=trace_dir)
        self.lock = threading.RLock()
        self.posts: list[tuple[str, dict]] = []
        self.settings = {"delay_ms": 0, "fsync": "always", "truncation": "generation", "impl": "solutions"}
        self.extra_events: list[dict] = []  # canned events appended after the simulator's
        self.auto_tick = auto_tick
        self.tick_seconds = tick_seconds
        self.stopping = False
        self.state_calls = 0
        handler = type("Handler", (_Handler,), {"fake": self})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.control_url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._threads = [threading.Thread(target=self.server.serve_forever, daemon=True)]
        if auto_tick:
            self._threads.append(threading.Thread(target=self._ticker, daemon=True))
        for t in self._threads:
            t.start()

    def _ticker(self):
        while not self.stopping:
            with self.lock:
                self.sim.tick()
            time.sleep(self.tick_seconds)

    def run_until(self, predicate, max_ticks=3000) -> bool:
        with self.lock:
            return self.sim.run_until(predicate, max_ticks)

    def elect(self, name: str = "A") -> None:
        with self.lock:
            self.sim.campaign(name)
            assert self.sim.run_until(lambda: self.sim.leader() == name, 500)

    def all_events(self) -> list[dict]:
        return self.sim.events + self.extra_events

    def state(self) -> dict:
        with self.lock:
            status = self.sim.status()
        for node in status["nodes"]:
            node.setdefault("pid", 1000 + ord(node["id"]))
            node["log_start"] = node["log"][0][0] if node["log"] else node["log_end"] + 1
        links = [{"src": a, "dst": b, "cut": (a, b) in self.sim.cuts}
                 for a in self.sim.names for b in self.sim.names if a != b]
        return {"run_dir": "fake", "settings": dict(self.settings), "leader": status["leader"],
                "nodes": status["nodes"], "links": links}

    def handle_post(self, path: str, body: dict) -> tuple[int, dict]:
        self.posts.append((path, body))
        sim = self.sim
        parts = path.strip("/").split("/")
        with self.lock:
            try:
                if parts[:2] == ["api", "nodes"] and len(parts) == 4:
                    node, action = parts[2], parts[3]
                    if node not in sim.names:
                        return 404, {"ok": False, "error": f"no node {node}"}
                    getattr(sim, action.replace("-", "_"))(node)
                    return 200, {"ok": True}
                if path == "/api/links/cut":
                    sim.cut(body["src"], body["dst"], one_way=body.get("one_way", False))
                    return 200, {"ok": True}
                if path == "/api/links/heal":
                    if body.get("src"):
                        sim.heal(body["src"], body["dst"], one_way=body.get("one_way", False))
                    else:
                        sim.heal()
                    return 200, {"ok": True}
                if path == "/api/ticks":  # recorded only: the simulator's time is the test's to give
                    self.settings["hold_ticks"] = bool(body.get("hold"))
                    return 200, {"ok": True}
                if path == "/api/settings":
                    self.settings.update(body)
                    if "delay_ms" in body:
                        sim.delay(body["delay_ms"])
                        sim._cluster_event("delay_set", ms=body["delay_ms"])
                    return 200, {"ok": True, "settings": dict(self.settings)}
                if path == "/api/read":
                    answer = sim.read(int(body["index"]), body["node"])
                    node = sim.node(body["node"])
                    hwm = node.high_water_mark if node else None
                    if answer.ok:
                        return 200, {"ok": True, "index": answer.index, "generation": answer.generation,
                                     "payload": answer.payload, "high_water_mark": hwm}
                    return 409, {**refused(answer), "high_water_mark": hwm}
                if path == "/api/write":
                    request = sim.write(body["payload"], body.get("node"))
                    if not self.auto_tick:
                        sim.run_until(lambda: request in sim.answers, 300)
            except ValueError as exc:
                return 400, {"ok": False, "error": str(exc)}
        if path == "/api/write":
            deadline = time.monotonic() + 3
            while request not in sim.answers and time.monotonic() < deadline:
                time.sleep(0.01)
            answer = sim.answers.get(request)
            if answer is None:
                return 504, {"ok": False, "error": "timeout: the high-water mark did not cover the entry"}
            if not answer.ok:
                return 409, refused(answer)
            return 200, {"ok": True, "index": answer.index, "generation": answer.generation,
                         "node": answer.leader}
        if path == "/api/shutdown":
            return 200, {"ok": True}
        return 404, {"ok": False, "error": f"no such endpoint {path}"}

    def stop(self):
        self.stopping = True
        self.server.shutdown()
        self.server.server_close()


class _Handler(BaseHTTPRequestHandler):
    fake: FakeControl

    def log_message(self, *args):
        pass

    def _answer(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        url = urlsplit(self.path)
        if url.path == "/api/state":
            self.fake.state_calls += 1
            return self._answer(200, self.fake.state())
        if url.path == "/api/events":
            query = parse_qs(url.query)
            after = int(query.get("after", ["0"])[0])
            limit = int(query.get("limit", ["1000"])[0])
            with self.fake.lock:
                events = self.fake.all_events()[after:after + limit]
                events = [dict(e) for e in events]
            return self._answer(200, {"events": events, "next": after + len(events)})
        return self._answer(404, {"ok": False, "error": "not found"})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}") if length else {}
        status, answer = self.fake.handle_post(urlsplit(self.path).path, body)
        return self._answer(status, answer)
