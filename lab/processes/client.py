"""Clients: `ControlClient` speaks the supervisor's HTTP + JSON control API (docs/control-api.md);
`NodeClient` speaks the framed wire format straight to one node's port.

Plain `http.client` and `socket`, so both work in the CLI, in tests and under eventlet (the dashboard).
"""

from __future__ import annotations

import http.client
import itertools
import json
import os
import socket
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

from lab.core import reasons
from lab.core.reasons import BECAUSE, Reason, because_of, reason_from_record, with_reasons
from lab.ports import codec
from lab.core.messages import Answer, Challenge, ClientRead, ClientWrite, Control, ControlReply, Hello
from lab.ports.tcp import SUPERVISOR, proof

CLUSTER_FILE = "cluster.json"


# ---- the control API ----------------------------------------------------------------------------------------


class ControlError(Exception):
    """The control API could not be asked, or refused: the base of the two below."""


class ClusterUnavailable(ControlError):
    """Nothing answers at the control address (no cluster, or it stopped)."""


class ApiError(ControlError):
    """The control API refused a request; `status` is the HTTP status and `body` the JSON answer."""

    def __init__(self, message: str, status: int = 0, body: dict | None = None):
        super().__init__(message)
        self.status = status
        self.body = body or {}


class ControlClient:
    """The control API of one cluster, and the remote proxy of its fault vocabulary
    (lab.ports.fault_vocabulary.Cluster): the CLI, the dashboard and the scenario driver all use it. Operations raise
    ApiError when refused; write and read return the answer (a dict with `ok`, and `refusal` when not ok) either way,
    because a refused read or a timed-out write is an answer too."""

    def __init__(self, url: str, timeout: float = 10.0, *, token: str | None = None):
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"control URL must look like http://127.0.0.1:PORT, not {url!r}")
        self.url = url.rstrip("/")
        self.host, self.port = parts.hostname, parts.port or 80
        self.timeout = timeout
        self.token = token  # the cluster's token (cluster.json): needed by every request that changes anything

    def call(self, method: str, path: str, body: dict | None = None, *, timeout: float | None = None,
             query: dict | None = None) -> tuple[int, dict]:
        if query:
            path = f"{path}?{urlencode({k: v for k, v in query.items() if v is not None})}"
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json"} if data is not None else {}
        if self.token and method != "GET":
            headers["X-HWM-Token"] = self.token
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout or self.timeout)
        try:
            try:
                conn.request(method, path, body=data, headers=headers)
                response = conn.getresponse()
                raw = response.read()
            except ConnectionRefusedError as exc:
                raise ClusterUnavailable(Reason(reasons.CONTROL_UNREACHABLE, url=self.url,
                                                error=exc.strerror)) from None
            except (socket.timeout, TimeoutError):
                raise ApiError(Reason(reasons.CONTROL_SLOW, url=self.url, request=f"{method} {path}",
                                      seconds=float(timeout or self.timeout))) from None
            except (ConnectionError, http.client.HTTPException) as exc:
                raise ClusterUnavailable(Reason(reasons.CONTROL_GONE, url=self.url, error=str(exc))) from None
        finally:
            conn.close()
        try:
            answer = json.loads(raw.decode("utf-8")) if raw else {}
        except ValueError:
            raise ApiError(Reason(reasons.CONTROL_NOT_JSON, request=f"{method} {path}", status=response.status),
                           response.status) from None
        return response.status, answer

    def post(self, path: str, body: dict | None = None, *, timeout: float | None = None) -> dict:
        """A POST whose refusal is an answer too (the dashboard shows it): the JSON object it got, whatever the
        status; ApiError only when the answer is not one."""
        status, answer = self.call("POST", path, body or {}, timeout=timeout)
        if not isinstance(answer, dict) or "ok" not in answer:
            raise ApiError(Reason(reasons.CONTROL_NOT_ANSWER, request=f"POST {path}", status=status), status)
        return answer

    def _op(self, method: str, path: str, body: dict | None = None, **kw) -> dict:
        status, answer = self.call(method, path, body, **kw)
        if status >= 400 or not answer.get("ok", True):
            raise ApiError(reason_from_record(answer.get("because")) or answer.get("error")
                           or Reason(reasons.CONTROL_FAILED, request=f"{method} {path}", status=status), status, answer)
        return answer

    # -- reading --
    def state(self, log: int | str | None = None) -> dict:
        return self._op("GET", "/api/state", query={"log": log})

    def events(self, after: int = 0, limit: int | None = None) -> dict:
        """A page of the trace's events; the fields a line's `because` describes are Reasons again."""
        page = self._op("GET", "/api/events", query={"after": after, "limit": limit})
        for event in page.get("events") or []:
            if isinstance(event, dict) and BECAUSE in event:
                with_reasons(event)
        return page

    def all_events(self) -> list[dict]:
        events, after = [], 0
        while True:
            page = self.events(after=after, limit=5000)
            events.extend(page["events"])
            if not page["events"]:
                return events
            after = page["next"]

    def node_log(self, node: str) -> list[list]:
        return self._op("GET", f"/api/nodes/{node}/log")["entries"]

    # -- clients --
    def write(self, payload: str, node: str | None = None, *, timeout: float = 5.0, wait: bool = True,
              client: str | None = None) -> dict:
        body = {"payload": payload, "timeout": timeout}
        if not wait:
            body["wait"] = False  # the control API waits for the answer unless told not to
        if node:
            body["node"] = node
        if client:
            body["client"] = client  # the session the clients' history puts it in
        return self.call("POST", "/api/write", body, timeout=timeout + 5.0)[1]

    def read(self, index: int, node: str | None = None, *, linearizable: bool = False,
             client: str | None = None) -> dict:
        body: dict[str, Any] = {"index": index}
        if node:
            body["node"] = node
        if linearizable:
            body["linearizable"] = True
        if client:
            body["client"] = client
        return self.call("POST", "/api/read", body)[1]

    # -- faults --
    def kill(self, node: str, *, lose_unsynced: bool = False) -> dict:
        return self._op("POST", f"/api/nodes/{node}/kill", {"lose_unsynced": True} if lose_unsynced else {})

    def restart(self, node: str, *, repair: bool = False) -> dict:
        return self._op("POST", f"/api/nodes/{node}/restart", {"repair": True} if repair else {}, timeout=30.0)

    def pause(self, node: str) -> dict:
        return self._op("POST", f"/api/nodes/{node}/pause", {})

    def resume(self, node: str) -> dict:
        return self._op("POST", f"/api/nodes/{node}/resume", {})

    def campaign(self, node: str) -> dict:
        return self._op("POST", f"/api/nodes/{node}/campaign", {})

    def flush(self, node: str) -> dict:
        return self._op("POST", f"/api/nodes/{node}/flush", {})

    def disk_full(self, node: str) -> dict:
        return self._op("POST", f"/api/nodes/{node}/disk-full", {})

    def disk_ok(self, node: str) -> dict:
        return self._op("POST", f"/api/nodes/{node}/disk-ok", {})

    def fsync_fail(self, node: str) -> dict:
        return self._op("POST", f"/api/nodes/{node}/fsync-fail", {})

    def cut(self, src: str, dst: str, *, one_way: bool = False) -> dict:
        return self._op("POST", "/api/links/cut", {"src": src, "dst": dst, "one_way": one_way})

    def isolate(self, node: str) -> dict:
        return self._op("POST", "/api/links/isolate", {"node": node})

    def heal(self, src: str | None = None, dst: str | None = None, *, one_way: bool = False) -> dict:
        body = {"src": src, "dst": dst, "one_way": one_way} if src else {}
        return self._op("POST", "/api/links/heal", body)

    def delay(self, ms: float, src: str | None = None, dst: str | None = None) -> dict:
        return self._op("POST", "/api/links/delay", {"ms": ms, "src": src, "dst": dst})

    def drop(self, rate: float, src: str | None = None, dst: str | None = None) -> dict:
        return self._op("POST", "/api/links/drop", {"rate": rate, "src": src, "dst": dst})

    def settings(self, **settings) -> dict:
        return self._op("POST", "/api/settings", settings)

    def ticks(self, hold: bool) -> dict:
        return self._op("POST", "/api/ticks", {"hold": hold})

    def snapshot(self) -> dict:
        return self._op("POST", "/api/snapshot", {})

    def note(self, kind: str, **fields) -> dict:
        """A line of the caller's in the cluster's trace; its reasons keep their kinds (`because`)."""
        because = because_of(kind, fields)
        return self._op("POST", "/api/note", {"type": kind, **fields, **({BECAUSE: because} if because else {})})

    def shutdown(self, timeout: float = 30.0) -> dict:
        return self._op("POST", "/api/shutdown", {}, timeout=timeout)


def cluster_info(run_dir: str | os.PathLike) -> dict | None:
    """The running cluster recorded in RUN_DIR/cluster.json (its control URL and token), or None if there is none
    (or its process is gone)."""
    path = Path(run_dir) / CLUSTER_FILE
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
        pid = int(info["pid"])
        info["control_url"]  # noqa: B018 - must be there
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not pid_alive(pid):
        return None
    return info


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is not alive
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


# ---- one node, over the wire format -------------------------------------------------------------------------


class NodeError(Exception):
    """A node refused a control request, or the connection to it failed."""


class NodeClient:
    """A blocking connection to one node's port: client writes and reads, control requests.

    A node greets every connection with a Challenge; with the cluster's `secret` this client answers it as the
    supervisor, which may then ask control requests that change the node (stop, ticks, network, flush...).

    Not thread-safe: one per thread, or guard it with a lock.
    """

    def __init__(self, host: str, port: int, *, timeout: float = 5.0, max_frame: int = codec.MAX_FRAME,
                 secret: bytes | None = None):
        self.address = (host, port)
        self.timeout = timeout
        self.max_frame = max_frame
        self.secret = secret
        self._sock: socket.socket | None = None
        self._decoder = codec.FrameDecoder(max_frame)
        self._inbox: list = []
        self._prefix = uuid.uuid4().hex[:8]
        self._counter = itertools.count(1)
        self.sent = False  # whether the last request left this process (a timeout after it is ambiguous)

    def new_request_id(self, kind: str = "c") -> str:
        return f"{kind}{self._prefix}-{next(self._counter)}"

    def connect(self) -> None:
        if self._sock is None:
            sock = socket.create_connection(self.address, timeout=self.timeout)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._sock = sock
            self._decoder = codec.FrameDecoder(self.max_frame)
            self._inbox = []
            challenge = self.receive()
            if not isinstance(challenge, Challenge):
                self.close()
                raise NodeError(f"node {self.address[0]}:{self.address[1]} opened with a "
                                f"{type(challenge).__name__}, not a Challenge")
            if self.secret is not None:
                self.send(Hello(node=SUPERVISOR, proof=proof(self.secret, challenge.nonce, SUPERVISOR, challenge.node)))

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def __enter__(self) -> "NodeClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def send_raw(self, data: bytes) -> None:
        self.connect()
        self._sock.sendall(data)

    def send(self, *messages) -> None:
        self.send_raw(codec.encode_many(messages, self.max_frame))

    def receive(self, timeout: float | None = None):
        """The next message from the node; TimeoutError if none comes in time, ConnectionError if it closed."""
        self.connect()
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while not self._inbox:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(Reason(reasons.SENT_NOTHING, address=f"{self.address[0]}:{self.address[1]}"))
            self._sock.settimeout(remaining)
            try:
                data = self._sock.recv(1 << 16)  # recv(1 MiB) would map and unmap a fresh megabyte every call
            except socket.timeout:
                address = f"{self.address[0]}:{self.address[1]}"
                raise TimeoutError(Reason(reasons.SENT_NOTHING, address=address)) from None
            if not data:
                self.close()
                raise ConnectionError(Reason(reasons.CONNECTION_CLOSED, address=f"{self.address[0]}:{self.address[1]}"))
            self._inbox.extend(self._decoder.feed(data))
        return self._inbox.pop(0)

    def request(self, message, timeout: float | None = None):
        """Send one request and wait for the reply that carries its request id."""
        self.sent = False
        self.send(message)
        self.sent = True
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            reply = self.receive(max(0.0, deadline - time.monotonic()))
            if getattr(reply, "request", None) == message.request:
                return reply

    def write(self, payload: str, *, request: str | None = None, timeout: float | None = None) -> Answer:
        return self.request(ClientWrite(request=request or self.new_request_id("w"), payload=payload), timeout)

    def read(self, index: int, *, timeout: float | None = None, request: str | None = None,
             linearizable: bool = False) -> Answer:
        return self.request(ClientRead(request=request or self.new_request_id("r"), index=index,
                                       linearizable=linearizable), timeout)

    def control(self, op: str, timeout: float | None = None, **args) -> dict:
        reply = self.request(Control(request=self.new_request_id("k"), op=op, args=args), timeout)
        if not isinstance(reply, ControlReply):
            raise NodeError(f"node answered a control request with a {type(reply).__name__}")
        if not reply.ok:
            raise NodeError(reply.error)
        return reply.result
