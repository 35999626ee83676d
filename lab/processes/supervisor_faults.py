"""The supervisor's faults (lab.ports.fault_vocabulary): kill, restart, pause, resume; the storage faults; cuts,
delays and drops on links, written to the network file that every node reads; the cluster's settings.

A mixin of `Supervisor` (lab.processes.supervisor), which holds the state it works on.
"""

from __future__ import annotations

import logging
import os
import signal

from lab.ports.fault_vocabulary import check_delay, check_rate
from lab.core.config import FSYNC_POLICIES, TRUNCATION_STRATEGIES, check_choice
from lab.ports import codec
from lab.processes.client import NodeError
from lab.processes.errors import BadRequest, SupervisorError
from lab.processes.runfiles import NETWORK_FILE, write_json
from lab.core import reasons
from lab.core.reasons import Reason, because
from lab.core.events import (
    DELAY_SET, DISK_FULL, DISK_OK, DROP_SET, FSYNC_FAIL, LINK_CUT, LINK_HEALED, NODE_KILLED, NODE_PAUSED,
    NODE_RESTARTED, NODE_RESUMED, SETTINGS_CHANGED)

log = logging.getLogger("lab.processes.supervisor")
SETTINGS = frozenset({"delay_ms", "fsync", "truncation", "writeback_ms"})  # what PUT /api/settings may set


class Faults:
    """What a teacher or a nemesis does to the cluster: to its nodes, their disks and the links between them."""

    # ---- nodes -----------------------------------------------------------------------------------------------

    def kill(self, name: str, *, lose_unsynced: bool = False) -> None:
        """SIGKILL. Without lose_unsynced the node first writes out its fsync-`never` buffer and its mark, so only
        the process dies (a crash); with it, what the node had not synced is lost too (a power cut)."""
        with self.lock:
            node = self._node(name)
            if node.state in ("killed", "exited", "stopped"):
                raise SupervisorError(Reason(reasons.NODE_ALREADY, node=name, state=node.state))
            if not lose_unsynced and node.state == "running":
                try:
                    self._control(node, "flush", timeout=2.0)
                except (OSError, TimeoutError, NodeError, codec.CodecError) as exc:
                    log.warning("flush before killing %s failed: %s", name, exc)
            try:
                node.proc.send_signal(signal.SIGKILL)
            except ProcessLookupError:
                pass
            node.proc.wait()
            node.state, node.exit_code = "killed", node.proc.returncode
            self._close_client(node)
            self._mark_dead(node)
            self.cluster_event(NODE_KILLED, target=name, lose_unsynced=lose_unsynced, pid=node.pid)

    def restart(self, name: str, *, repair: bool = False) -> None:
        """A new process on the same data directory (a running node is killed first, as in the simulator). With
        repair, the node starts even on a log damaged in the middle: it keeps the valid prefix and catches up."""
        with self.lock:
            node = self._node(name)
            if node.state in ("running", "paused"):
                self.kill(name, lose_unsynced=False)
            self.cluster_event(NODE_RESTARTED, target=name, **({"repair": True} if repair else {}))
            self._spawn(node, repair=repair)
            try:
                self._await_ready(node)
            finally:
                self._publish_network()

    def pause(self, name: str) -> None:
        with self.lock:
            node = self._node(name)
            if node.state != "running":
                raise SupervisorError(Reason(reasons.CANNOT_PAUSE, node=name, state=node.state))
            try:  # what it was when it froze: a paused node answers nothing
                node.last = self._control(node, "status", timeout=2.0, log="all")
            except (OSError, TimeoutError, NodeError, codec.CodecError) as exc:
                log.warning("status of %s before pausing: %s", name, exc)
            os.kill(node.pid, signal.SIGSTOP)
            node.state = "paused"
            self._close_client(node)
            self.cluster_event(NODE_PAUSED, target=name)

    def resume(self, name: str) -> None:
        with self.lock:
            node = self._node(name)
            if node.state != "paused":
                raise SupervisorError(Reason(reasons.NOT_PAUSED, node=name, state=node.state))
            os.kill(node.pid, signal.SIGCONT)
            node.state = "running"
            self.cluster_event(NODE_RESUMED, target=name)

    # ---- storage faults (lab.ports.fault_vocabulary: disk-full, disk-ok, fsync-fail) ------------------------------

    def disk_full(self, name: str) -> None:
        """Every write of the node fails with ENOSPC, until disk_ok (a restarted node starts on a full disk)."""
        self._disk(name, DISK_FULL, full=True)

    def disk_ok(self, name: str) -> None:
        self._disk(name, DISK_OK, full=False)

    def fsync_fail(self, name: str) -> None:
        """The node's next fsync fails with EIO, and what it was to sync is dropped, as a kernel may."""
        with self.lock:
            node = self._running(name)
            try:
                self._control(node, "disk", fsync_fail=True)
            except (OSError, TimeoutError, NodeError, codec.CodecError) as exc:  # it stopped meanwhile
                self._reap(node)
                raise SupervisorError(Reason(reasons.FAULT_NOT_TAKEN, node=name, error=because(exc))) from None
            self.cluster_event(FSYNC_FAIL, target=name)

    def _disk(self, name: str, event: str, *, full: bool) -> None:
        with self.lock:
            node = self._node(name)
            if node.state == "paused":
                raise SupervisorError(Reason(reasons.RESUME_FIRST, node=name))
            (self.full_disks.add if full else self.full_disks.discard)(name)
            if node.state == "running":
                try:
                    self._control(node, "disk", full=full)
                except (OSError, TimeoutError, NodeError, codec.CodecError) as exc:
                    log.warning("%s on %s: %s (it applies when the node restarts)", event, name, exc)
            self.cluster_event(event, target=name)

    # ---- links and settings ----------------------------------------------------------------------------------

    def cut(self, src: str, dst: str, *, one_way: bool = False) -> None:
        with self.lock:
            self._node(src), self._node(dst)
            if src == dst:
                raise BadRequest(Reason(reasons.LINK_ONE_NODE))
            for a, b in [(src, dst)] if one_way else [(src, dst), (dst, src)]:
                if (a, b) not in self.cuts:
                    self.cuts.add((a, b))
                    self.cluster_event(LINK_CUT, src=a, dst=b)
            self._publish_network()

    def isolate(self, name: str) -> None:
        with self.lock:
            self._node(name)
            for other in self.names:
                if other != name:
                    for a, b in ((name, other), (other, name)):
                        if (a, b) not in self.cuts:
                            self.cuts.add((a, b))
                            self.cluster_event(LINK_CUT, src=a, dst=b)
            self._publish_network()

    def heal(self, src: str | None = None, dst: str | None = None, *, one_way: bool = False) -> None:
        with self.lock:
            if src is not None:
                self._node(src), self._node(dst)
            for a, b in sorted(self.cuts):
                if src is None or (a, b) == (src, dst) or (not one_way and (a, b) == (dst, src)):
                    self.cuts.discard((a, b))
                    self.cluster_event(LINK_HEALED, src=a, dst=b)
            self._publish_network()

    def delay(self, ms: float, src: str | None = None, dst: str | None = None) -> None:
        try:
            ms = check_delay(ms)
        except ValueError as exc:
            raise BadRequest(because(exc)) from None
        with self.lock:
            if src is None and dst is None:
                self.settings["delay_ms"] = ms
                self.link_delays.clear()
                self.cluster_event(DELAY_SET, ms=ms)
            else:
                if src is None or dst is None:
                    raise BadRequest(Reason(reasons.LINK_DELAY_ENDS))
                self._node(src), self._node(dst)
                self.link_delays[(src, dst)] = ms
                self.cluster_event(DELAY_SET, ms=ms, src=src, dst=dst)
            self._publish_network()

    def drop(self, rate: float, src: str | None = None, dst: str | None = None) -> None:
        try:
            rate = check_rate(rate)
        except ValueError as exc:
            raise BadRequest(because(exc)) from None
        with self.lock:
            if src is None and dst is None:
                self.drop_rate = rate
                self.link_drops.clear()
                self.cluster_event(DROP_SET, rate=rate)
            else:
                if src is None or dst is None:
                    raise BadRequest(Reason(reasons.LINK_DROP_ENDS))
                self._node(src), self._node(dst)
                self.link_drops[(src, dst)] = rate
                self.cluster_event(DROP_SET, rate=rate, src=src, dst=dst)
            self._publish_network()

    def update_settings(self, body: dict) -> dict:
        with self.lock:
            unknown = set(body) - SETTINGS
            if unknown:
                raise BadRequest(Reason(reasons.UNKNOWN_SETTINGS, names=sorted(unknown), known=sorted(SETTINGS)))
            if "fsync" in body:
                fsync = body["fsync"]
                policies = fsync if isinstance(fsync, dict) else {n: fsync for n in self.names}
                for name, policy in policies.items():
                    self._node(name)
                    self._choice("fsync", policy, FSYNC_POLICIES)
                self.settings["fsync"].update(policies)
            if "truncation" in body:
                self._choice("truncation", body["truncation"], TRUNCATION_STRATEGIES)
                self.settings["truncation"] = body["truncation"]
            if "writeback_ms" in body:
                self.settings["writeback_ms"] = float(body["writeback_ms"])
            changed = {k: v for k, v in body.items() if k != "delay_ms"}
            if changed:
                self.cluster_event(SETTINGS_CHANGED, **changed)
            if "delay_ms" in body:
                self.delay(body["delay_ms"])
            return self.public_settings()

    @staticmethod
    def _choice(what: str, value, choices: tuple[str, ...]) -> None:
        try:
            check_choice(what, value, choices)
        except ValueError as exc:
            raise BadRequest(because(exc)) from None

    def public_settings(self) -> dict:
        fsync = self.settings["fsync"]
        same = len(set(fsync.values())) == 1
        return {**self.settings, "fsync": next(iter(fsync.values())) if same else dict(fsync)}

    def _write_network(self) -> None:
        try:
            self._write_network_file()
        except OSError as exc:
            raise SupervisorError(f"cannot write {NETWORK_FILE} (the nodes read their links there): "
                                  f"{exc.strerror or exc}") from exc

    def _write_network_file(self) -> None:
        network = {
            "peers": {n.id: [self.host, n.port] for n in self.nodes.values() if n.port},
            "cuts": sorted([list(c) for c in self.cuts]),
            "delay_ms": self.settings["delay_ms"],
            "link_delay_ms": {f"{a}>{b}": ms for (a, b), ms in self.link_delays.items()},
            "drop": self.drop_rate,
            "link_drop": {f"{a}>{b}": rate for (a, b), rate in self.link_drops.items()},
        }
        write_json(self.run_dir / NETWORK_FILE, network)

    def _publish_network(self) -> None:
        """Write the network file, then make every running node read it now (paused ones read it on resume)."""
        self._write_network()
        for node in self.nodes.values():
            self._reap(node)
            if node.state == "running":
                try:
                    self._control(node, "network", timeout=2.0)
                except (OSError, TimeoutError, NodeError, codec.CodecError) as exc:
                    log.warning("network update to %s: %s", node.id, exc)
