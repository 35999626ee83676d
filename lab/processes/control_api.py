"""The supervisor's control API over HTTP + JSON (docs/control-api.md): routing, bodies and status codes.

HTTP lives only here: the supervisor raises its refusals by kind (lab.processes.errors) and answers client writes
and reads with a refusal kind (lab.core.messages); this module turns both into status codes.

What it lets in: it listens on 127.0.0.1 only and answers only requests addressed to it there (a Host header naming
another address is refused, so no web page can reach it by DNS rebinding). A request that changes anything (every
POST) must carry the cluster's token (X-HWM-Token, from RUN_DIR/cluster.json, mode 0600) and a JSON content type,
so no cross-origin page can make one: the token is checked before the body is read. Bodies are capped in size and
nesting before they are parsed, numbers are range-checked, and a client that sends too slowly is cut off.
"""

from __future__ import annotations

import hmac
import json
import logging
import re
import threading
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from lab.ports.fault_vocabulary import FAULTS, NODE_WORDS, check_delay, check_rate
from lab.core.messages import NODE_DOWN, TIMEOUT, UNREACHABLE
from lab.core.reasons import (API_BODY_DEEP, API_BODY_NOT_JSON, API_BODY_NOT_OBJECT, API_BODY_SHORT,
                              API_CLIENT_NAME, API_CONTENT_LENGTH, API_NOT_A_NUMBER, API_NOTE_TYPE, API_SECONDS,
                              API_TEXT, API_WHOLE_NUMBER, API_YES_NO, BECAUSE, CLUSTER_HAS_STOPPED, Reason, because, with_reasons)
from lab.processes.errors import BadRequest, NotFound, SupervisorError

log = logging.getLogger("lab.processes.control_api")

MAX_BODY = 9 * 1024 * 1024  # request bodies (a write's payload is at most a frame, 8 MiB)
MAX_DEPTH = 8  # nesting of a request body (they are flat objects; a note may hold small lists)
MAX_WAIT = 60.0  # the longest a client may ask a write to wait, in seconds
TOKEN_HEADER = "X-HWM-Token"
CLIENT_SECONDS = 10  # a client has this long to send its request line, headers and body
INT_LIMIT = 1 << 63
CLIENT_NAME = re.compile(r"[A-Za-z0-9._-]{1,40}")  # a client session's name (the clients' history, lab.harness.history)
BACKLOG = 256  # connections waiting to be accepted

# A refused write or read is an answer, with the status that says why.
REFUSAL_STATUS = {TIMEOUT: 504, UNREACHABLE: 504, NODE_DOWN: 503}


class Refused(Exception):
    """A request refused before it reaches the supervisor: wrong address, no token, not JSON, too big."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


ERROR_STATUS = ((Refused, None), (NotFound, 404), (BadRequest, 400), (SupervisorError, 409))
_STRINGS = re.compile(rb'"(?:[^"\\]|\\.)*"')
_BRACKETS = re.compile(rb"[\[\]{}]")


def _nesting(raw: bytes) -> int:
    """How deep a JSON text nests, without parsing it (strings, which may hold brackets, are skipped first)."""
    depth = deepest = 0
    for bracket in _BRACKETS.findall(_STRINGS.sub(b'""', raw)):
        depth += 1 if bracket in (b"[", b"{") else -1
        deepest = max(deepest, depth)
    return deepest


def _no_constant(name: str):
    raise BadRequest(Reason(API_NOT_A_NUMBER, name=name))


def _int(value, name: str, low: int, high: int) -> int:
    if isinstance(value, str) and re.fullmatch(r"-?[0-9]{1,25}", value):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise BadRequest(Reason(API_WHOLE_NUMBER, name=name, low=low, high=high, value=repr(value)[:80]))
    return value


def _seconds(value, name: str, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= high:
        raise BadRequest(Reason(API_SECONDS, name=name, high=float(high), value=repr(value)[:80]))
    return float(value)


def _text(value, name: str, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise BadRequest(Reason(API_TEXT, name=name, value=repr(value)[:80]))
    return value


def serve(supervisor, port: int = 0) -> ThreadingHTTPServer:
    """Serve `supervisor` on 127.0.0.1:port (0 picks a free one) from a daemon thread."""
    handler = type("Handler", (_Handler,), {"supervisor": supervisor})
    server = _Server(("127.0.0.1", port), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="control-api", daemon=True).start()
    return server


class _Server(ThreadingHTTPServer):
    """A listen queue for the clients a full-speed run brings (16 writers, the dashboard, the bench): with the
    default of 5, connections beyond it are dropped and the client's kernel retries only after a second."""

    request_queue_size = BACKLOG


def _answer_status(answer: dict) -> int:
    return 200 if answer.get("ok") else REFUSAL_STATUS.get(answer.get("refusal"), 409)


class _Handler(BaseHTTPRequestHandler):
    supervisor = None
    protocol_version = "HTTP/1.0"
    timeout = CLIENT_SECONDS

    def log_message(self, fmt, *args) -> None:
        log.debug("api: " + fmt, *args)

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def _reply(self, status: int, body: dict | bytes) -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()  # bytes: JSON already
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
            self._check_host()
            body = self._body() if method == "POST" else {}
            status, answer = self._route(method, url.path.rstrip("/"), query, body)
        except (Refused, SupervisorError) as exc:
            status = next(exc.status if code is None else code for kind, code in ERROR_STATUS if isinstance(exc, kind))
            answer = {"ok": False, "error": str(exc)}
            reason = because(exc)
            if isinstance(reason, Reason):  # which refusal, for a reader in another language
                answer["because"] = reason.as_record()
        except (KeyError, TypeError, ValueError) as exc:
            status, answer = 400, {"ok": False, "error": f"bad request: {exc}"}
        except Exception as exc:  # the API stays up; the cause goes to the log
            log.error("api %s %s failed:\n%s", method, self.path, traceback.format_exc())
            status, answer = 500, {"ok": False, "error": f"internal error: {exc}"}
        try:
            self._reply(status, answer)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _check_host(self) -> None:
        port = self.server.server_address[1]
        host = self.headers.get("Host")
        if host is not None and host not in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"):
            raise Refused(403, f"this control API answers only at 127.0.0.1:{port}, not at {host!r}")

    def _body(self) -> dict:
        """A POST's body: allowed (token), JSON (content type), bounded (size, nesting), an object."""
        token = self.headers.get(TOKEN_HEADER)
        if token is None:
            raise Refused(401, f"a request that changes the cluster needs the cluster's token in {TOKEN_HEADER} "
                               f"(hwm-lab reads it from the run directory's cluster.json)")
        if not hmac.compare_digest(token.encode(), self.supervisor.api_token.encode()):
            raise Refused(403, f"wrong {TOKEN_HEADER}: not this cluster's token")
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            raise BadRequest(Reason(API_CONTENT_LENGTH)) from None
        if length and (self.headers.get("Content-Type") or "").split(";")[0].strip().lower() != "application/json":
            raise Refused(415, "a request body must be sent as application/json")
        if not 0 <= length <= MAX_BODY:
            raise Refused(413, f"a request body is at most {MAX_BODY} bytes")
        raw = self.rfile.read(length) if length else b""
        if len(raw) != length:
            raise BadRequest(Reason(API_BODY_SHORT, got=len(raw), length=length))
        if _nesting(raw) > MAX_DEPTH:
            raise BadRequest(Reason(API_BODY_DEEP, most=MAX_DEPTH))
        try:
            body = json.loads(raw, parse_constant=_no_constant) if raw.strip() else {}
        except ValueError:
            raise BadRequest(Reason(API_BODY_NOT_JSON)) from None
        if not isinstance(body, dict):
            raise BadRequest(Reason(API_BODY_NOT_OBJECT))
        return body

    def _route(self, method: str, path: str, query: dict, body: dict) -> tuple[int, dict | bytes]:
        s = self.supervisor
        if s.stopped and path != "/api/state":
            raise SupervisorError(Reason(CLUSTER_HAS_STOPPED))
        parts = path.split("/")
        if method == "GET":
            return _get(s, path, parts, query)
        if len(parts) == 5 and parts[:3] == ["", "api", "nodes"]:
            return 200, _node_action(s, parts[3], parts[4], body)
        if path not in POSTS:
            raise NotFound(f"no such resource: POST {path}")
        return POSTS[path](s, body)


def _get(s, path: str, parts: list[str], query: dict) -> tuple[int, dict | bytes]:
    if path == "/api/state":
        log_arg = query.get("log", "20")
        return 200, s.state(log="all" if log_arg == "all" else _int(log_arg, "log", 0, 1_000_000))
    if path == "/api/events":
        limit = _int(query["limit"], "limit", 1, 100_000) if query.get("limit") else None
        return 200, s.events_json(_int(query.get("after", "0"), "after", 0, INT_LIMIT), limit)
    if len(parts) == 5 and parts[:3] == ["", "api", "nodes"] and parts[4] == "log":
        return 200, {"ok": True, "entries": s.node_log(parts[3])}
    raise NotFound(f"no such resource: GET {path}")


def _node_action(s, name: str, word: str, body: dict) -> dict:
    """POST /api/nodes/NAME/WORD: a word of the fault vocabulary that names one node, with its yes-or-no options."""
    if word not in NODE_WORDS:
        raise NotFound(f"no such action {word!r} ({', '.join(NODE_WORDS)})")
    fault = FAULTS[word]
    done = getattr(s, fault.method)(name, **{flag: bool(body.get(flag, False))
                                             for flag in fault.flags + fault.real_flags})
    return {"ok": True, **(done or {})}  # flush says where the log ends


# ---- POST routes: each (supervisor, body) -> (status, answer) --------------------------------------------------


def _yes_no(body: dict, name: str) -> bool:
    value = body.get(name, False)
    if not isinstance(value, bool):
        raise BadRequest(Reason(API_YES_NO, name=name, value=repr(value)[:80]))
    return value


def _client(body: dict) -> str | None:
    """The session a write or read belongs to in the clients' history: a short name, or none."""
    client = _text(body.get("client"), "client", True)
    if client is not None and not CLIENT_NAME.fullmatch(client):
        raise BadRequest(Reason(API_CLIENT_NAME, value=repr(client)[:80]))
    return client


def _write(s, body: dict) -> tuple[int, dict]:
    answer = s.write(_text(body.get("payload"), "payload"), _text(body.get("node"), "node", True),
                     _seconds(body.get("timeout", 5.0), "timeout", MAX_WAIT), bool(body.get("wait", True)),
                     client=_client(body))
    return _answer_status(answer), answer


def _read(s, body: dict) -> tuple[int, dict]:
    answer = s.read(_int(body.get("index"), "index", 1 - INT_LIMIT, INT_LIMIT - 1),
                    _text(body.get("node"), "node", True), linearizable=_yes_no(body, "linearizable"),
                    client=_client(body))
    return _answer_status(answer), answer


def _note(s, body: dict) -> tuple[int, dict]:
    fields = with_reasons(dict(body))  # a reason said with its kind is a Reason again
    fields.pop(BECAUSE, None)  # the trace writes it again, from the Reasons
    kind = fields.pop("type")
    if not isinstance(kind, str) or not kind:
        raise BadRequest(Reason(API_NOTE_TYPE))
    s.cluster_event(kind, **fields)
    return 200, {"ok": True}


# The vocabulary's words on links (lab.ports.fault_vocabulary: LINKS): POST /api/links/WORD, (supervisor, body).
LINK_ACTIONS = {
    "cut": lambda s, body: s.cut(body["src"], body["dst"], one_way=bool(body.get("one_way", False))),
    "isolate": lambda s, body: s.isolate(body["node"]),
    "heal": lambda s, body: s.heal(body.get("src"), body.get("dst"), one_way=bool(body.get("one_way", False))),
    "delay": lambda s, body: s.delay(_checked(check_delay, body.get("ms")), body.get("src"), body.get("dst")),
    "drop": lambda s, body: s.drop(_checked(check_rate, body.get("rate")), body.get("src"), body.get("dst")),
}


def _done(action):
    def route(s, body: dict) -> tuple[int, dict]:
        action(s, body)
        return 200, {"ok": True}
    return route


def _shutdown(s) -> None:
    threading.Thread(target=s.stop, name="shutdown", daemon=True).start()


POSTS = {
    "/api/write": _write,
    "/api/read": _read,
    **{f"/api/links/{word}": _done(action) for word, action in LINK_ACTIONS.items()},
    "/api/settings": lambda s, body: (200, {"ok": True, "settings": s.update_settings(body)}),
    "/api/ticks": _done(lambda s, body: s.hold_ticks(bool(body.get("hold", False)))),
    "/api/snapshot": lambda s, body: (200, {"ok": True, "nodes": s.snapshot()}),
    "/api/note": _note,
    "/api/shutdown": _done(lambda s, body: _shutdown(s)),
}


def _checked(check, value):
    try:
        return check(value)
    except ValueError as exc:
        raise BadRequest(because(exc)) from None
