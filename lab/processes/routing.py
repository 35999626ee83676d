"""The supervisor's routing of client writes and reads: to the leader as last seen, following its redirects, over a
NodeClient kept per node. Every outcome is an `Answer`, made JSON once (lab.ports.codec) with its own field names
and `node`, the node that answered.

A mixin of `Supervisor` (lab.processes.supervisor), which holds the state it works on.
"""

from __future__ import annotations

import threading
import time

from lab.core.messages import NODE_DOWN, NOT_LEADER, TIMEOUT, UNREACHABLE, Answer, answer_fields, digest
from lab.core.replica import timeout_error
from lab.ports import codec
from lab.processes.client import NodeClient
from lab.processes.errors import BadRequest, SupervisorError
from lab.core import reasons
from lab.core.events import CLIENT_ANSWER, CLIENT_READ, CLIENT_WRITE, CLIENT_WRITE_FAILED, LEADER_APPEND
from lab.core.reasons import Reason, because

READ_SECONDS = 3.0  # a node answers a read at once, or not at all
LINEARIZABLE_SECONDS = 6.0  # a leader answers a linearizable read within its write timeout (3 s), or steps down


class NodeClients:
    """The client connections kept open to each node, so that a request does not open one (nor its retry).

    A connection is lent to one request at a time (a NodeClient is not thread-safe), and given back when the
    request got its answer; one that failed or timed out is closed, as a late answer on it would be another's.
    """

    def __init__(self, host: str, max_frame: int):
        self.host = host
        self.max_frame = max_frame
        self._idle: dict[str, list[tuple[int, NodeClient]]] = {}
        self._lock = threading.Lock()

    def take(self, node: str, port: int, timeout: float) -> NodeClient:
        with self._lock:
            idle = self._idle.get(node, [])
            while idle:
                kept_port, client = idle.pop()
                if kept_port == port:
                    client.timeout = timeout
                    return client
                client.close()  # the node was restarted on another port
        return NodeClient(self.host, port, timeout=timeout, max_frame=self.max_frame)

    def give_back(self, node: str, port: int, client: NodeClient) -> None:
        with self._lock:
            self._idle.setdefault(node, []).append((port, client))

    def forget(self, node: str) -> None:
        """Close the node's connections: it was killed, paused or restarted."""
        with self._lock:
            idle = self._idle.pop(node, [])
        for _, client in idle:
            client.close()


class Routing:
    """Client writes and reads, as the control API serves them."""

    def write(self, payload: str, node: str | None = None, timeout: float = 5.0, wait: bool = True,
              client: str | None = None) -> dict:
        if not isinstance(payload, str):
            raise BadRequest(Reason(reasons.API_TEXT, name="payload", value=repr(payload)[:80]))
        if node is not None:
            self._node(node)
        request = f"w{self._request_prefix}-{next(self._requests)}"
        self.cluster_event(CLIENT_WRITE, payload=payload, digest=digest(payload), target=node, request=request,
                           **({"client": client} if client else {}))
        if not wait:
            threading.Thread(target=self._answered_write, args=(payload, node, timeout, request), daemon=True).start()
            return {"ok": True, "pending": True, "request": request}
        return codec.answer_to_json(*self._answered_write(payload, node, timeout, request))

    def _answered_write(self, payload: str, node: str | None, timeout: float,
                        request: str) -> tuple[Answer, str | None]:
        answer, target = self._write(payload, node, timeout, request)
        self.cluster_event(CLIENT_ANSWER, **answer_fields(answer, target))
        return answer, target

    def _write(self, payload: str, node: str | None, timeout: float, request: str) -> tuple[Answer, str | None]:
        """Route one write until a node acknowledges or refuses it for good: its Answer, and who answered."""
        deadline = time.monotonic() + timeout
        target = node or self._leader_hint or self._any_running()
        why = Reason(reasons.NO_NODE_RUNNING)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return self._write_failed(request, TIMEOUT, Reason(reasons.WRITE_NOT_ACKED, seconds=f"{timeout:g}",
                                                                   why=why))
            proc = self.nodes.get(target) if target else None
            if proc is None or proc.state != "running" or not proc.port:
                why = (Reason(reasons.NODE_IS, node=target, state=proc.state) if proc
                       else Reason(reasons.NO_NODE_RUNNING))
                target = self._leader_hint if self._leader_hint != target else None
                target = target or self._any_running(exclude=proc.id if proc else None)
                time.sleep(min(0.05, max(0.0, remaining)))
                continue
            port = proc.port
            client = self.clients.take(target, port, remaining)
            try:
                answer = client.write(payload, request=request, timeout=remaining)
            except (TimeoutError, OSError, codec.CodecError) as exc:
                client.close()
                if not client.sent:  # never left: try elsewhere
                    why = Reason(reasons.NODE_UNREACHABLE, node=target, error=because(exc))
                    target = self._any_running(exclude=target)
                    time.sleep(0.02)
                    continue
                if isinstance(exc, TimeoutError):
                    return self._write_failed(request, TIMEOUT, self._where_is(request, target, timeout))
                return self._write_failed(request, UNREACHABLE, Reason(reasons.CONNECTION_LOST, node=target,
                                                                       error=because(exc)))
            self.clients.give_back(target, port, client)
            if answer.ok:
                self._leader_hint = target
                return answer, target
            if answer.refusal == NOT_LEADER:
                why = answer.error
                if answer.leader and answer.leader != target:
                    target = answer.leader
                else:
                    time.sleep(0.05)  # an election is under way
                    target = self._find_leader() or self._any_running(exclude=target)
                continue
            if self._leader_hint == target:
                self._leader_hint = None
            self.cluster_event(CLIENT_WRITE_FAILED, request=request, reason=answer.error)
            return answer, target

    def _where_is(self, request: str, target: str, timeout: float) -> str:
        """Why a write sent to `target` got no answer in time, from what the nodes know: where its index is."""
        appended = next((e for e in reversed(self.event_dicts(0))
                         if e.get("type") == LEADER_APPEND and e.get("request") == request), None)
        if appended is None:
            return Reason(reasons.NODE_SILENT, node=target, seconds=f"{timeout:g}")
        index = appended["index"]
        state = self.state(log=0)
        holders = [n["id"] for n in state["nodes"] if n.get("log_end", 0) >= index and n["state"] == "running"]
        hwm = max((n.get("hwm", 0) for n in state["nodes"] if n["id"] == appended["node"]), default=0)
        return timeout_error(index, holders, len(state["nodes"]), hwm, later=True)

    def _write_failed(self, request: str, refusal: str, error: str) -> tuple[Answer, None]:
        self.cluster_event(CLIENT_WRITE_FAILED, request=request, reason=error)
        return Answer(request=request, ok=False, error=error, refusal=refusal), None

    def _any_running(self, exclude: str | None = None) -> str | None:
        running = [n.id for n in self.nodes.values() if n.state == "running" and n.id != exclude]
        return running[0] if running else None

    def _find_leader(self) -> str | None:
        return self.state(log=0)["leader"]

    def read(self, index: int, node: str | None = None, linearizable: bool = False,
             client: str | None = None) -> dict:
        """A read of `node` (default: the leader as last seen). A linearizable one that a node refuses because it
        does not lead is asked again of the leader it names, as a write is: `node` in the answer says who answered."""
        if isinstance(index, bool) or not isinstance(index, int):
            raise BadRequest(Reason(reasons.API_INTEGER, name="index", value=repr(index)[:80]))
        target = node or self._leader_hint or self._find_leader() or self._any_running()
        if target is None:
            raise SupervisorError(Reason(reasons.NO_NODE_RUNNING))
        proc = self._node(target)
        request = f"r{self._request_prefix}-{next(self._requests)}"
        self.cluster_event(CLIENT_READ, index=index, target=target, request=request,
                           **({"client": client} if client else {}), **({"linearizable": True} if linearizable else {}))
        answer = self._read(proc, index, request, linearizable)
        for _ in range(len(self.nodes)):  # each hop to the leader a node names (or the last one seen), bounded
            hop = (answer.leader or self._leader_hint or self._find_leader()) if linearizable and \
                answer.refusal == NOT_LEADER else None
            if hop is None or hop == target or hop not in self.nodes:
                break
            target = hop
            answer = self._read(self.nodes[target], index, request, linearizable)
        if linearizable and answer.ok:
            self._leader_hint = target
        self.cluster_event(CLIENT_ANSWER, **answer_fields(answer, target if answer.refusal != NODE_DOWN else None))
        return codec.answer_to_json(answer, node=target)

    def _read(self, proc, index: int, request: str, linearizable: bool = False) -> Answer:
        if proc.state != "running":
            return Answer(request=request, ok=False, index=index,
                          error=Reason(reasons.NODE_IS, node=proc.id, state=proc.state), refusal=NODE_DOWN)
        port, seconds = proc.port, LINEARIZABLE_SECONDS if linearizable else READ_SECONDS
        client = self.clients.take(proc.id, port, seconds)
        try:
            answer = client.read(index, timeout=seconds, request=request, linearizable=linearizable)
        except (TimeoutError, OSError, codec.CodecError) as exc:
            client.close()
            return Answer(request=request, ok=False, index=index,
                          error=Reason(reasons.NO_ANSWER, node=proc.id, error=because(exc)), refusal=UNREACHABLE)
        self.clients.give_back(proc.id, port, client)
        return answer
