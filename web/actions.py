"""The dashboard's control actions: one table from an action's name to what it asks, through ControlClient."""

from __future__ import annotations

from lab.core.reasons import because
from lab.core.config import FSYNC_POLICIES, MAX_NODES, TRUNCATION_STRATEGIES
from lab.i18n import Text, say
from lab.ports.fault_vocabulary import FAULTS, MAX_DELAY_MS, NODE
from lab.processes.client import ControlClient, ControlError
from lab.i18n.scenarios import command_text
from web.narrate import answer_error

NODE_FAULTS = tuple(word for word, fault in FAULTS.items() if fault.on == NODE and not fault.nudge)
IN_FLIGHT_MS = 10_000  # a message in flight arrives within this
VIEWERS_ONLY = say("viewers can only watch: control actions need the instructor token")


def perform(dash, action: str, args: dict) -> dict:
    """Run one control action; answer a dict for the page ({"ok": False, "error": ...} when refused)."""
    try:
        answer = _run(dash, action, args or {})
    except (ValueError, TypeError, RuntimeError, ControlError) as exc:
        answer = {"ok": False, "error": said(exc)}
    answer.setdefault("ok", True)
    answer["action"] = action
    return answer


def _run(dash, action: str, args: dict) -> dict:
    if action in CLUSTER:
        return CLUSTER[action](dash, dash.client(), args)  # refuses first when there is no cluster at all
    if action in ROOM:
        return ROOM[action](dash, args)
    if action.startswith("guide_"):
        return _guide(dash, action[len("guide_"):], args)
    raise ValueError(say("unknown action {action}", action=repr(action)))


def said(exc: Exception):
    """An exception's message: its Text or Reason when it has one (said in the room's language), else its English."""
    message = exc.args[0] if exc.args else ""
    return message if isinstance(message, Text) else because(exc)


def node_arg(dash, args: dict, key: str = "node", optional: bool = False) -> str | None:
    value = args.get(key)
    if value in (None, "", "auto", "leader") and optional:
        return None
    ids = dash.node_ids()
    if value not in ids:
        if ids:
            raise ValueError(say("no node {node} in this cluster (nodes: {nodes})", node=repr(value),
                                 nodes=", ".join(ids)))
        raise ValueError(say("no node {node} in this cluster (nodes: none)", node=repr(value)))
    return value


def _link(dash, args: dict) -> tuple[str, str]:
    src, dst = node_arg(dash, args, "src"), node_arg(dash, args, "dst")
    if src == dst:
        raise ValueError(say("a link joins two different nodes"))
    return src, dst


# ---- over the cluster's control API -------------------------------------------------------------------------

def _node_fault(action: str):
    def run(dash, client: ControlClient, args: dict) -> dict:
        return getattr(client, FAULTS[action].method)(node_arg(dash, args))
    return run


def cut(dash, client: ControlClient, args: dict) -> dict:
    return client.cut(*_link(dash, args), one_way=bool(args.get("one_way", False)))


def heal(dash, client: ControlClient, args: dict) -> dict:
    return client.heal(*_link(dash, args), one_way=bool(args.get("one_way", False)))


def cut_in_flight(dash, client: ControlClient, args: dict) -> dict:
    """Lose the message now in flight from src to dst (a click on it): the link is cut one way until it would
    have arrived, then healed. (Nodes lose what a cut link holds when they send it, so nothing else is needed;
    messages sent on that link in the meantime are lost too, as on a real network.)"""
    src, dst = node_arg(dash, args, "src"), node_arg(dash, args, "dst")
    try:
        ms = float(args.get("ms"))
    except (TypeError, ValueError):
        raise ValueError(say("drop needs the time the message has left in flight (ms)")) from None
    if not 0 < ms <= IN_FLIGHT_MS:
        raise ValueError(say("a message in flight arrives within 10 s"))
    if src == dst:
        raise ValueError(say("a link joins two different nodes"))
    if any(l["src"] == src and l["dst"] == dst and l.get("cut") for l in dash.feed.cluster.get("links") or []):
        raise ValueError(say("the link {src} → {dst} is already cut: the message is lost anyway", src=src, dst=dst))
    answer = client.cut(src, dst, one_way=True)
    if answer.get("ok"):
        dash.socketio.start_background_task(_heal_later, dash, client, src, dst, ms / 1000.0 + 0.2)
    return {**answer, "src": src, "dst": dst, "ms": ms}


def _heal_later(dash, client: ControlClient, src: str, dst: str, seconds: float) -> None:
    dash.socketio.sleep(seconds)
    try:
        client.heal(src, dst, one_way=True)
    except ControlError as exc:
        dash.app.logger.warning("healing %s -> %s after a message was cut in flight failed: %s", src, dst, exc)


def write(dash, client: ControlClient, args: dict) -> dict:
    payload = str(args.get("payload", "")).strip()
    if not payload or len(payload) > 200:
        raise ValueError(say("write a payload of 1 to 200 characters"))
    # In slow motion a write needs two trips per follower: wait long enough for them (and no longer).
    delay = float((dash.feed.cluster.get("settings") or {}).get("delay_ms") or 0) / 1000.0
    timeout = min(dash.config["WRITE_TIMEOUT"], max(5.0, 3 * delay + 3))
    answer = client.write(payload, node_arg(dash, args, optional=True), timeout=timeout)
    if answer.get("error"):
        answer["error"] = answer_error(answer)
    return answer


def read(dash, client: ControlClient, args: dict) -> dict:
    try:
        index = int(args.get("index"))
    except (TypeError, ValueError):
        raise ValueError(say("read needs an index (a whole number from 1)")) from None
    if index < 1:
        raise ValueError(say("indexes start at 1"))
    answer = client.read(index, node_arg(dash, args))
    if answer.get("error"):
        answer["error"] = answer_error(answer)
    return answer


def settings(dash, client: ControlClient, args: dict) -> dict:
    body = {}
    if args.get("fsync") is not None:
        if args["fsync"] not in FSYNC_POLICIES:
            raise ValueError(say("fsync is one of {values}", values=", ".join(FSYNC_POLICIES)))
        body["fsync"] = args["fsync"]
    if args.get("truncation") is not None:
        if args["truncation"] not in TRUNCATION_STRATEGIES:
            raise ValueError(say("truncation is one of {values}", values=", ".join(TRUNCATION_STRATEGIES)))
        body["truncation"] = args["truncation"]
    if args.get("delay_ms") is not None:
        delay = int(args["delay_ms"])
        if not 0 <= delay <= MAX_DELAY_MS:
            raise ValueError(say("slow motion delays each message by 0 to {ms} ms", ms=f"{MAX_DELAY_MS:g}"))
        body["delay_ms"] = delay
    if not body:
        raise ValueError(say("no setting given (fsync, truncation or delay_ms)"))
    return client.settings(**body)


CLUSTER = {  # action -> run(dashboard, client, args)
    **{name: _node_fault(name) for name in NODE_FAULTS},
    "cut": cut, "heal": heal, "heal_all": lambda dash, client, args: client.heal(),
    "cut_in_flight": cut_in_flight,
    "clocks": lambda dash, client, args: client.ticks(bool(args.get("hold"))),
    "write": write, "read": read, "settings": settings,
}


# ---- the dashboard's own -----------------------------------------------------------------------------------

def start_cluster(dash, args: dict) -> dict:
    nodes = int(args.get("nodes", 3))
    if not 1 <= nodes <= MAX_NODES:
        raise ValueError(say("a cluster here has 1 to {most} nodes", most=MAX_NODES))
    return dash.start_cluster(nodes, {k: args[k] for k in ("fsync", "truncation") if args.get(k)})


ROOM = {  # action -> run(dashboard, args)
    "start_cluster": start_cluster,
    "replay_open": lambda dash, args: {"ok": True, "replay": dash.open_replay(str(args.get("dir", "")))},
    "room_lang": lambda dash, args: dash.set_room_lang(args.get("lang")),
}


def _guide(dash, what: str, args: dict) -> dict:
    guide = dash.guide
    if guide is None:
        raise RuntimeError(say("guided scenarios need a cluster this dashboard started (hwm-lab demo)"))
    if what == "start":
        question = _replace_question(dash)
        if question and not args.get("replace"):
            return {"ok": False, "confirm": question, "error": question}
        return {"ok": True, "guide": guide_for_pages(guide.start(str(args.get("scenario", "")),
                                                                 args.get("truncation") or None))}
    if what in ("next", "back", "stop"):
        return {"ok": True, "guide": guide_for_pages(getattr(guide, what)())}
    if what == "state":
        return {"ok": True, "guide": guide_for_pages(guide.state())}
    raise ValueError(say("unknown guide action {action}", action=repr(what)))


def _replace_question(dash):
    """What to ask before a guided scenario replaces the live cluster: nothing when it holds no entry and
    runs no other scenario (nothing the room has built is lost)."""
    entries = max((n.get("log_end") or 0 for n in dash.feed.nodes.values()), default=0)
    running = dash.guide.scenario is not None
    if not entries and not running:
        return None
    return say("Starting the scenario replaces the live cluster (log end {entries}): start it?",
               entries=entries)


def guide_for_pages(state: dict) -> dict:
    """The guide's state with the scripts' checks in the room's words (and sayable in any language)."""
    if state.get("outcomes"):
        state = {**state, "outcomes": [{**o, "name": command_text(o.get("name") or "")}
                                       for o in state["outcomes"]]}
    return state
