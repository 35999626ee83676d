"""The supervisor's control API over HTTP + JSON (docs/control-api.md): routing, bodies and status codes.

HTTP lives only here: the supervisor raises its refusals by kind (lab.processes.errors) and answers client writes
and reads with a refusal kind (lab.core.messages); this module turns both into status codes.
"""

from __future__ import annotations

import json
import logging
import threading
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from lab.core.messages import NODE_DOWN, TIMEOUT, UNREACHABLE
from lab.processes.errors import BadRequest, NotFound, SupervisorError

log = logging.getLogger("lab.processes.control_api")

MAX_BODY = 16 * 1024 * 1024  # request bodies (a write's payload is at most a frame, 8 MiB)

# A refused write or read is an answer, with the status that says why.
REFUSAL_STATUS = {TIMEOUT: 504, UNREACHABLE: 504, NODE_DOWN: 503}
ERROR_STATUS = ((NotFound, 404), (BadRequest, 400), (SupervisorError, 409))


def serve(supervisor, port: int = 0) -> ThreadingHTTPServer:
    """Serve `supervisor` on 127.0.0.1:port (0 picks a free one) from a daemon thread."""
    handler = type("Handler", (_Handler,), {"supervisor": supervisor})
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="control-api", daemon=True).start()
    return server


def _answer_status(answer: dict) -> int:
    return 200 if answer.get("ok") else REFUSAL_STATUS.get(answer.get("refusal"), 409)


class _Handler(BaseHTTPRequestHandler):
    supervisor = None
    protocol_version = "HTTP/1.0"

    def log_message(self, fmt, *args) -> None:
        log.debug("api: " + fmt, *args)

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def _reply(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(data)

    def _dispatch(self, method: str) -> None:
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        try:
            body = {}
            if method == "POST":
                length = int(self.headers.get("Content-Length") or 0)
                if not 0 <= length <= MAX_BODY:
                    raise BadRequest(f"a request body is at most {MAX_BODY} bytes")
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw.strip() else {}
                except ValueError:
                    raise BadRequest("the request body is not JSON") from None
                if not isinstance(body, dict):
                    raise BadRequest("the request body must be a JSON object")
            status, answer = self._route(method, url.path.rstrip("/"), query, body)
        except SupervisorError as exc:
            status = next(code for kind, code in ERROR_STATUS if isinstance(exc, kind))
            answer = {"ok": False, "error": str(exc)}
        except (KeyError, TypeError, ValueError) as exc:
            status, answer = 400, {"ok": False, "error": f"bad request: {exc}"}
        except Exception as exc:  # the API stays up; the cause goes to the log
            log.error("api %s %s failed:\n%s", method, self.path, traceback.format_exc())
            status, answer = 500, {"ok": False, "error": f"internal error: {exc}"}
        try:
            self._reply(status, answer)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _route(self, method: str, path: str, query: dict, body: dict) -> tuple[int, dict]:
        s = self.supervisor
        if s.stopped and path != "/api/state":
            raise SupervisorError("the cluster has stopped")
        parts = path.split("/")
        if method == "GET":
            if path == "/api/state":
                log_arg = query.get("log", "20")
                return 200, s.state(log="all" if log_arg == "all" else int(log_arg))
            if path == "/api/events":
                limit = int(query["limit"]) if query.get("limit") else None
                events, after = s.events(int(query.get("after", 0)), limit)
                return 200, {"events": events, "next": after}
            if len(parts) == 5 and parts[:3] == ["", "api", "nodes"] and parts[4] == "log":
                return 200, {"ok": True, "entries": s.node_log(parts[3])}
            raise NotFound(f"no such resource: GET {path}")
        if path == "/api/write":
            answer = s.write(body["payload"], body.get("node"), float(body.get("timeout", 5.0)),
                             bool(body.get("wait", True)))
            return _answer_status(answer), answer
        if path == "/api/read":
            answer = s.read(body["index"], body.get("node"))
            return _answer_status(answer), answer
        if len(parts) == 5 and parts[:3] == ["", "api", "nodes"]:
            name, action = parts[3], parts[4]
            if action == "kill":
                s.kill(name, lose_unsynced=bool(body.get("lose_unsynced", False)))
            elif action == "restart":
                s.restart(name)
            elif action == "pause":
                s.pause(name)
            elif action == "resume":
                s.resume(name)
            elif action == "campaign":
                s.campaign(name)
            elif action == "flush":
                return 200, {"ok": True, **s.flush(name)}
            else:
                raise NotFound(f"no such action {action!r} (kill, restart, pause, resume, campaign, flush)")
            return 200, {"ok": True}
        if path == "/api/links/cut":
            s.cut(body["src"], body["dst"], one_way=bool(body.get("one_way", False)))
        elif path == "/api/links/isolate":
            s.isolate(body["node"])
        elif path == "/api/links/heal":
            s.heal(body.get("src"), body.get("dst"), one_way=bool(body.get("one_way", False)))
        elif path == "/api/links/delay":
            s.delay(body["ms"], body.get("src"), body.get("dst"))
        elif path == "/api/links/drop":
            s.drop(body["rate"], body.get("src"), body.get("dst"))
        elif path == "/api/settings":
            return 200, {"ok": True, "settings": s.update_settings(body)}
        elif path == "/api/ticks":
            s.hold_ticks(bool(body.get("hold", False)))
        elif path == "/api/snapshot":
            return 200, {"ok": True, "nodes": s.snapshot()}
        elif path == "/api/note":
            fields = dict(body)
            kind = fields.pop("type")
            if not isinstance(kind, str) or not kind:
                raise BadRequest("a note needs a type")
            s.cluster_event(kind, **fields)
        elif path == "/api/shutdown":
            threading.Thread(target=s.stop, name="shutdown", daemon=True).start()
        else:
            raise NotFound(f"no such resource: POST {path}")
        return 200, {"ok": True}
