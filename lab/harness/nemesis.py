"""The fault injector and the clients of a chaos run (lab.harness.chaos): random faults through the control API of
a cluster of real node processes, while concurrent writers and readers record what they were told."""

from __future__ import annotations

import random
import threading
import time

from lab.processes.client import ApiError, ClusterUnavailable, ControlClient
from lab.core.events import DISK_FULL, FSYNC_FAIL
from lab.harness.checker import Fault, ReadRecord, WriteRecord


class Nemesis:
    """Chooses and applies one fault at a time, from what the cluster looks like now. At most `max_down` nodes
    are killed or paused at once (a majority stays, so the cluster can go on committing); cuts, delays and drops
    are not budgeted.

    Faults, from the vocabulary of lab/ports/fault_vocabulary.py and sent through the control API (ControlClient) of a
    supervisor: SIGKILL (leaders often), restart, pause and resume, two-way and one-way cuts, isolation, heal,
    delays and drops; with `storage` also a full disk and a failed fsync (disk-full, fsync-fail: the node stops, and
    is restarted after disk-ok). Maelstrom's nemesis is the model."""

    def __init__(self, api: ControlClient, names: list[str], rng: random.Random, start_time: float,
                 max_down: int, leader_bias: float = 0.5, storage: bool = False):
        self.api, self.names, self.rng = api, names, rng
        self.storage = storage
        self.disk_faulted: set[str] = set()  # disk-full or fsync-fail asked, disk-ok not yet
        self.start_time = start_time
        self.max_down = max_down
        self.leader_bias = leader_bias
        self.cuts: set[tuple[str, str]] = set()
        self.slowed = False  # a delay or a drop is set somewhere
        self.faults: list[Fault] = []

    def step(self) -> Fault:
        try:
            state = self.api.state(log=0)
        except ApiError as exc:  # a slow answer under load: note it and try again next time
            fault = Fault(time=time.time() - self.start_time, op="observe", refused=str(exc))
            self.faults.append(fault)
            return fault
        nodes = {n["id"]: n for n in state["nodes"]}
        running = [n for n in self.names if nodes[n]["state"] == "running"]
        paused = [n for n in self.names if nodes[n]["state"] == "paused"]
        dead = [n for n in self.names if nodes[n]["state"] in ("killed", "exited")]
        doomed = [n for n in self.disk_faulted if n in running]  # they stop at their next write or fsync
        leader = state["leader"]
        options = [(1.0, "cut"), (1.0, "cut_one_way"), (0.4, "isolate"), (0.8, "delay"), (0.4, "drop")] \
            if len(self.names) > 1 else []
        healthy = [n for n in running if n not in self.disk_faulted]
        if running and len(paused) + len(dead) + len(doomed) < self.max_down:
            options += [(2.0, "kill"), (1.2, "pause"), (0.4, "restart_running")]
            if self.storage and healthy:
                options += [(1.0, DISK_FULL), (1.0, FSYNC_FAIL)]
        if dead:
            options.append((3.0, "restart"))
        if paused:
            options.append((3.0, "resume"))
        if self.cuts:
            options.append((1.5, "heal"))
        if self.slowed:
            options.append((1.2, "calm"))
        if not options:
            options = [(1.0, "wait")]  # a single node that cannot be taken down: nothing to do this time
        op = self.rng.choices([name for _, name in options], weights=[w for w, _ in options])[0]
        rng = self.rng

        def victim(pool: list[str]) -> str:
            if leader in pool and rng.random() < self.leader_bias:
                return leader
            return rng.choice(pool)

        pair = rng.sample(self.names, 2) if len(self.names) > 1 else []
        fault = Fault(time=time.time() - self.start_time, op=op, leader=leader,
                      leader_generation=nodes[leader]["generation"] if leader else 0)
        if op == "wait":
            return fault
        try:
            if op == "kill":
                fault.target = victim(running)
                self.api.kill(fault.target, lose_unsynced=True)  # SIGKILL, no flush asked first
            elif op == "restart_running":
                fault.op, fault.target = "restart", victim(running)
                self.api.restart(fault.target)
            elif op == "restart":
                fault.target = rng.choice(dead)
                if fault.target in self.disk_faulted:
                    fault.detail = "after disk-ok"
                    self.api.disk_ok(fault.target)
                    self.disk_faulted.discard(fault.target)
                self.api.restart(fault.target)
            elif op in (DISK_FULL, FSYNC_FAIL):
                fault.target = victim(healthy)
                getattr(self.api, op)(fault.target)
                self.disk_faulted.add(fault.target)
            elif op == "pause":
                fault.target = victim(running)
                self.api.pause(fault.target)
            elif op == "resume":
                fault.target = rng.choice(paused)
                self.api.resume(fault.target)
            elif op in ("cut", "cut_one_way"):
                fault.target = f"{pair[0]}>{pair[1]}"
                self.api.cut(pair[0], pair[1], one_way=op == "cut_one_way")
                self.cuts.update([tuple(pair)] if op == "cut_one_way" else [tuple(pair), tuple(pair[::-1])])
            elif op == "isolate":
                fault.target = victim(self.names)
                self.api.isolate(fault.target)
                self.cuts.update((a, b) for a in self.names for b in self.names
                                 if a != b and fault.target in (a, b))
            elif op == "heal":
                if rng.random() < 0.5:
                    self.api.heal()
                    self.cuts.clear()
                else:
                    src, dst = rng.choice(sorted(self.cuts))
                    fault.target = f"{src}>{dst}"
                    self.api.heal(src, dst, one_way=True)
                    self.cuts.discard((src, dst))
            elif op == "delay":
                ms = round(rng.uniform(5, 150))
                fault.detail = f"{ms} ms"
                if rng.random() < 0.3:
                    self.api.delay(ms)
                else:
                    fault.target = f"{pair[0]}>{pair[1]}"
                    self.api.delay(ms, pair[0], pair[1])
                self.slowed = True
            elif op == "drop":
                rate = round(rng.uniform(0.05, 0.3), 2)
                fault.detail = f"rate {rate}"
                if rng.random() < 0.3:
                    self.api.drop(rate)
                else:
                    fault.target = f"{pair[0]}>{pair[1]}"
                    self.api.drop(rate, pair[0], pair[1])
                self.slowed = True
            elif op == "calm":
                self.api.delay(0)
                self.api.drop(0)
                self.slowed = False
        except ApiError as exc:  # e.g. the node exited on its own meanwhile: note it and go on
            fault.refused = str(exc)
        self.faults.append(fault)
        return fault

    def recover(self) -> None:
        """Undo every fault: heal, no delay or drop, resume the paused, restart the dead."""
        self.api.heal()
        self.api.delay(0)
        self.api.drop(0)
        self.cuts.clear()
        self.slowed = False
        for name in sorted(self.disk_faulted):
            self.api.disk_ok(name)
        self.disk_faulted.clear()
        for node in self.api.state(log=0)["nodes"]:
            try:
                if node["state"] == "paused":
                    self.api.resume(node["id"])
                elif node["state"] in ("killed", "exited"):
                    self.api.restart(node["id"])
            except ApiError as exc:
                self.faults.append(Fault(time=time.time() - self.start_time, op="recover", target=node["id"],
                                         refused=str(exc)))


class Clients:
    """Writers and readers on their own threads, each recording what it was told."""

    def __init__(self, api: ControlClient, names: list[str], seed: int, writers: int, readers: int,
                 write_timeout: float):
        self.url, self.token, self.names, self.seed = api.url, api.token, names, seed
        self.write_timeout = write_timeout
        self.writes: list[WriteRecord] = []
        self.reads: list[ReadRecord] = []
        self.acked_indexes: list[int] = []
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self._writer, args=(f"w{i}",), daemon=True) for i in range(writers)]
        self.threads += [threading.Thread(target=self._reader, args=(f"r{i}", random.Random(f"{seed}-r{i}")),
                                          daemon=True) for i in range(readers)]

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def stop(self, timeout: float) -> None:
        self.stopping.set()
        deadline = time.monotonic() + timeout
        for thread in self.threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    def write(self, api: ControlClient, client: str, payload: str) -> WriteRecord:
        try:
            answer = api.write(payload, timeout=self.write_timeout)
        except (ApiError, ClusterUnavailable) as exc:
            answer = {"ok": False, "refusal": f"api: {exc}"}
        record = WriteRecord(client=client, payload=payload, ok=bool(answer.get("ok")), index=answer.get("index", 0),
                             generation=answer.get("generation", 0), node=answer.get("node"),
                             refusal=answer.get("refusal", "") if not answer.get("ok") else "")
        self.writes.append(record)
        if record.ok:
            self.acked_indexes.append(record.index)
        return record

    def _writer(self, client: str) -> None:
        api = ControlClient(self.url, timeout=self.write_timeout + 10, token=self.token)
        count = 0
        while not self.stopping.is_set():
            count += 1
            record = self.write(api, client, f"{self.seed}.{client}.{count}")
            if not record.ok and record.refusal.startswith("api:"):
                time.sleep(0.05)

    def _reader(self, client: str, rng: random.Random) -> None:
        api = ControlClient(self.url, timeout=10.0, token=self.token)
        while not self.stopping.is_set():
            known = self.acked_indexes[-2000:]
            top = max(known) if known else 0
            index = rng.choice(known) if known and rng.random() < 0.8 else top + rng.randint(0, 3)
            node = rng.choice(self.names)
            try:
                answer = api.read(max(1, index), node)
            except (ApiError, ClusterUnavailable) as exc:
                answer = {"ok": False, "refusal": f"api: {exc}"}
            self.reads.append(ReadRecord(client=client, node=node, index=answer.get("index", index),
                                         ok=bool(answer.get("ok")), generation=answer.get("generation", 0),
                                         payload=answer.get("payload", ""), hwm=answer.get("high_water_mark", 0),
                                         refusal=answer.get("refusal", "") if not answer.get("ok") else ""))
            time.sleep(0.01)
