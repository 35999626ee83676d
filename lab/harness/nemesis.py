"""The fault injector and the clients of a chaos run (lab.harness.chaos): random faults through the control API of
a cluster of real node processes, while concurrent writers and readers record what they were told."""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, NamedTuple

from lab.harness.checker import Fault, ReadRecord, WriteRecord
from lab.ports.fault_vocabulary import FAULTS
from lab.processes.client import ApiError, ClusterUnavailable, ControlClient


class Nemesis:
    """Chooses and applies one fault at a time, from what the cluster looks like now. At most `max_down` nodes
    are killed or paused at once (a majority stays, so the cluster can go on committing); cuts, delays and drops
    are not budgeted.

    Faults, from the vocabulary of lab/ports/fault_vocabulary.py and sent through the control API (ControlClient)
    of a supervisor: SIGKILL (leaders often), restart, pause and resume, two-way and one-way cuts, isolation, heal,
    delays and drops; with `storage` also a full disk and a failed fsync (disk-full, fsync-fail: the node stops, and
    is restarted after disk-ok). Each is a move of MOVES. Maelstrom's nemesis is the model."""

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
        look = self.look(state)
        offered = [move for move in MOVES if move.offered(self, look)] or [WAIT]
        move = self.rng.choices(offered, weights=[m.weight for m in offered])[0]
        look.pair = self.rng.sample(self.names, 2) if len(self.names) > 1 else []
        fault = Fault(time=time.time() - self.start_time, op=move.op, leader=look.leader,
                      leader_generation=look.leader_generation)
        if move is WAIT:
            return fault
        try:
            move.apply(self, fault, look)
        except ApiError as exc:  # e.g. the node exited on its own meanwhile: note it and go on
            fault.refused = str(exc)
        self.faults.append(fault)
        return fault

    def look(self, state: dict) -> Look:
        nodes = {n["id"]: n for n in state["nodes"]}
        running = [n for n in self.names if nodes[n]["state"] == "running"]
        leader = state["leader"]
        return Look(running=running, paused=[n for n in self.names if nodes[n]["state"] == "paused"],
                    dead=[n for n in self.names if nodes[n]["state"] in ("killed", "exited")],
                    doomed=[n for n in self.disk_faulted if n in running],
                    healthy=[n for n in running if n not in self.disk_faulted], leader=leader,
                    leader_generation=nodes[leader]["generation"] if leader else 0)

    def victim(self, pool: list[str], look: Look) -> str:
        if look.leader in pool and self.rng.random() < self.leader_bias:
            return look.leader
        return self.rng.choice(pool)

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


@dataclass
class Look:
    """The cluster as one step of the nemesis sees it."""

    running: list[str]
    paused: list[str]
    dead: list[str]  # killed, or exited on their own
    doomed: list[str]  # running with a disk fault asked: they stop at their next write or fsync
    healthy: list[str]  # running, no disk fault asked
    leader: str | None
    leader_generation: int
    pair: list[str] = field(default_factory=list)  # two nodes, drawn once the move is chosen


# ---- the moves: each applies one fault (or two, for calm) to the nodes it picks, and notes them on the Fault ------


def _kill(nemesis: Nemesis, fault: Fault, look: Look) -> None:
    fault.target = nemesis.victim(look.running, look)
    nemesis.api.kill(fault.target, lose_unsynced=True)  # SIGKILL, no flush asked first


def _restart_running(nemesis: Nemesis, fault: Fault, look: Look) -> None:
    fault.op, fault.target = "restart", nemesis.victim(look.running, look)
    nemesis.api.restart(fault.target)


def _restart(nemesis: Nemesis, fault: Fault, look: Look) -> None:
    fault.target = nemesis.rng.choice(look.dead)
    if fault.target in nemesis.disk_faulted:
        fault.after_disk_ok = True
        nemesis.api.disk_ok(fault.target)
        nemesis.disk_faulted.discard(fault.target)
    nemesis.api.restart(fault.target)


def _disk_fault(nemesis: Nemesis, fault: Fault, look: Look) -> None:
    fault.target = nemesis.victim(look.healthy, look)
    getattr(nemesis.api, fault.op)(fault.target)  # the op is the method: disk_full, fsync_fail
    nemesis.disk_faulted.add(fault.target)


def _pause(nemesis: Nemesis, fault: Fault, look: Look) -> None:
    fault.target = nemesis.victim(look.running, look)
    nemesis.api.pause(fault.target)


def _resume(nemesis: Nemesis, fault: Fault, look: Look) -> None:
    fault.target = nemesis.rng.choice(look.paused)
    nemesis.api.resume(fault.target)


def _cut(nemesis: Nemesis, fault: Fault, look: Look) -> None:
    src, dst = look.pair
    one_way = fault.op == "cut_one_way"
    fault.target = f"{src}>{dst}"
    nemesis.api.cut(src, dst, one_way=one_way)
    nemesis.cuts.update([(src, dst)] if one_way else [(src, dst), (dst, src)])


def _isolate(nemesis: Nemesis, fault: Fault, look: Look) -> None:
    fault.target = nemesis.victim(nemesis.names, look)
    nemesis.api.isolate(fault.target)
    nemesis.cuts.update((a, b) for a in nemesis.names for b in nemesis.names if a != b and fault.target in (a, b))


def _heal(nemesis: Nemesis, fault: Fault, look: Look) -> None:
    if nemesis.rng.random() < 0.5:
        nemesis.api.heal()
        nemesis.cuts.clear()
    else:
        src, dst = nemesis.rng.choice(sorted(nemesis.cuts))
        fault.target = f"{src}>{dst}"
        nemesis.api.heal(src, dst, one_way=True)
        nemesis.cuts.discard((src, dst))


def _slow(setting: str, draw: Callable[[random.Random], float], noted: str):
    """A delay or a drop rate (`setting`, of a value drawn by `draw`, noted on the Fault as `noted`), on every link
    (three times in ten) or on the pair's."""
    def apply(nemesis: Nemesis, fault: Fault, look: Look) -> None:
        value = draw(nemesis.rng)
        setattr(fault, noted, value)
        if nemesis.rng.random() < 0.3:
            getattr(nemesis.api, setting)(value)
        else:
            fault.target = f"{look.pair[0]}>{look.pair[1]}"
            getattr(nemesis.api, setting)(value, look.pair[0], look.pair[1])
        nemesis.slowed = True
    return apply


def _calm(nemesis: Nemesis, fault: Fault, look: Look) -> None:
    nemesis.api.delay(0)
    nemesis.api.drop(0)
    nemesis.slowed = False


class Move(NamedTuple):
    """One thing the nemesis may do: its `op` (noted on the Fault), the vocabulary's `words` it uses, its `weight`
    among the moves `offered` now, and how it `apply`s."""

    op: str
    words: tuple[str, ...]
    weight: float
    offered: Callable[[Nemesis, Look], bool]
    apply: Callable[[Nemesis, Fault, Look], None]


def _links(nemesis: Nemesis, look: Look) -> bool:
    return len(nemesis.names) > 1


def _may_take_down(nemesis: Nemesis, look: Look) -> bool:
    return bool(look.running) and len(look.paused) + len(look.dead) + len(look.doomed) < nemesis.max_down


def _may_fail_a_disk(nemesis: Nemesis, look: Look) -> bool:
    return _may_take_down(nemesis, look) and nemesis.storage and bool(look.healthy)


MOVES = (  # in the order their weights are drawn
    Move("cut", ("cut",), 1.0, _links, _cut),
    Move("cut_one_way", ("cut",), 1.0, _links, _cut),
    Move("isolate", ("isolate",), 0.4, _links, _isolate),
    Move("delay", ("delay",), 0.8, _links, _slow("delay", lambda rng: round(rng.uniform(5, 150)), "delay_ms")),
    Move("drop", ("drop",), 0.4, _links, _slow("drop", lambda rng: round(rng.uniform(0.05, 0.3), 2), "drop_rate")),
    Move("kill", ("kill",), 2.0, _may_take_down, _kill),
    Move("pause", ("pause",), 1.2, _may_take_down, _pause),
    Move("restart_running", ("restart",), 0.4, _may_take_down, _restart_running),
    Move(FAULTS["disk-full"].method, ("disk-full",), 1.0, _may_fail_a_disk, _disk_fault),
    Move(FAULTS["fsync-fail"].method, ("fsync-fail",), 1.0, _may_fail_a_disk, _disk_fault),
    Move("restart", ("disk-ok", "restart"), 3.0, lambda nemesis, look: bool(look.dead), _restart),
    Move("resume", ("resume",), 3.0, lambda nemesis, look: bool(look.paused), _resume),
    Move("heal", ("heal",), 1.5, lambda nemesis, look: bool(nemesis.cuts), _heal),
    Move("calm", ("delay", "drop"), 1.2, lambda nemesis, look: nemesis.slowed, _calm),
)
WAIT = Move("wait", (), 1.0, lambda nemesis, look: True, lambda nemesis, fault, look: None)  # when no move is offered


class Clients:
    """Writers and readers on their own threads, each recording what it was told. Each is a session of the clients'
    history (its name is sent as `client`): a writer reads back some of its acknowledged writes from a node drawn
    at random (read-your-writes), a reader reads indexes acknowledged to anyone from every node in turn (monotonic
    reads). `linearizable`: every read asks the leader, which confirms it leads first (ReadIndex)."""

    READ_BACK = 0.3  # the share of a writer's acknowledged writes it reads back

    def __init__(self, api: ControlClient, names: list[str], seed: int, writers: int, readers: int,
                 write_timeout: float, linearizable: bool = False):
        self.url, self.token, self.names, self.seed = api.url, api.token, names, seed
        self.write_timeout = write_timeout
        self.linearizable = linearizable
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
            answer = api.write(payload, timeout=self.write_timeout, client=client)
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
        rng = random.Random(f"{self.seed}-{client}")
        count = 0
        while not self.stopping.is_set():
            count += 1
            record = self.write(api, client, f"{self.seed}.{client}.{count}")
            if not record.ok and record.refusal.startswith("api:"):
                time.sleep(0.05)
            elif record.ok and rng.random() < self.READ_BACK:
                self.read(api, client, record.index, rng.choice(self.names))

    def read(self, api: ControlClient, client: str, index: int, node: str) -> ReadRecord:
        try:
            answer = api.read(max(1, index), node, linearizable=self.linearizable, client=client)
        except (ApiError, ClusterUnavailable) as exc:
            answer = {"ok": False, "refusal": f"api: {exc}"}
        record = ReadRecord(client=client, node=answer.get("node") or node, index=answer.get("index", index),
                            ok=bool(answer.get("ok")), generation=answer.get("generation", 0),
                            payload=answer.get("payload", ""), hwm=answer.get("high_water_mark", 0),
                            refusal=answer.get("refusal", "") if not answer.get("ok") else "")
        self.reads.append(record)
        return record

    def _reader(self, client: str, rng: random.Random) -> None:
        api = ControlClient(self.url, timeout=10.0, token=self.token)
        turn = rng.randrange(len(self.names))
        while not self.stopping.is_set():
            known = self.acked_indexes[-2000:]
            top = max(known) if known else 0
            index = rng.choice(known) if known and rng.random() < 0.8 else top + rng.randint(0, 3)
            turn += 1
            self.read(api, client, index, self.names[turn % len(self.names)])  # every node in turn
            time.sleep(0.01)
