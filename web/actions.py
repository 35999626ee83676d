"""The dashboard's control actions: one table from an action's name to what it asks, through ControlClient."""

from __future__ import annotations

from lab.core.reasons import LINK_ONE_NODE, NO_NODE_IN_CLUSTER, NODE_DOWN, UNREACHABLE, Reason, because
from lab.core.config import FSYNC_POLICIES, MAX_NODES, TRUNCATION_STRATEGIES
from lab.i18n import Listed, Text, say
from lab.ports.fault_vocabulary import FAULTS, MAX_DELAY_MS, NODE
from lab.processes.client import ControlClient, ControlError
from lab.i18n.scenarios import command_text
from web.narrate import answer_error
from web.questions import DOWN, REFUSED, SERVED, live_read, outcome, why
from web.room import CLOSED, OPEN

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
        client = dash.client()  # refuses first when there is no cluster at all
        if dash.guide is not None and dash.guide.finished():
            dash.guide.stop()  # the room works on the cluster by hand now: the finished guide's caption goes
        return CLUSTER[action](dash, client, args)
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
    if value not in ids:  # (an empty list is said "(nodes: none)": the reason's variant for no node)
        raise ValueError(Reason(NO_NODE_IN_CLUSTER, node=repr(value), nodes=list(ids)))
    return value


def _link(dash, args: dict) -> tuple[str, str]:
    src, dst = node_arg(dash, args, "src"), node_arg(dash, args, "dst")
    if src == dst:
        raise ValueError(Reason(LINK_ONE_NODE))
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
        raise ValueError(Reason(LINK_ONE_NODE))
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
    answer = client.read(_index(args), node_arg(dash, args), linearizable=args.get("linearizable") is True)
    if answer.get("error"):
        answer["error"] = answer_error(answer)
    return answer


def settings(dash, client: ControlClient, args: dict) -> dict:
    body = {}
    if args.get("fsync") is not None:
        if args["fsync"] not in FSYNC_POLICIES:
            raise ValueError(say("fsync is one of {values}", values=Listed(FSYNC_POLICIES)))
        body["fsync"] = args["fsync"]
    if args.get("truncation") is not None:
        if args["truncation"] not in TRUNCATION_STRATEGIES:
            raise ValueError(say("truncation is one of {values}", values=Listed(TRUNCATION_STRATEGIES)))
        body["truncation"] = args["truncation"]
    if args.get("delay_ms") is not None:
        delay = int(args["delay_ms"])
        if not 0 <= delay <= MAX_DELAY_MS:
            raise ValueError(say("slow motion delays each message by 0 to {ms} ms", ms=f"{MAX_DELAY_MS:g}"))
        body["delay_ms"] = delay
    if not body:
        raise ValueError(say("no setting given (fsync, truncation or delay_ms)"))
    answer = client.settings(**body)
    dash.settings_chosen(body)  # chosen by hand: the next new cluster keeps it
    return answer


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


# ---- questions to the room (web.room; their answers from web.questions) ---------------------------------------

def question_ask(dash, args: dict) -> dict:
    """Ask the room: one of the guide's questions about its next step (`n`), or whether a read the instructor is
    about to make (`index` from `node`) will be served."""
    if args.get("index") is not None:
        dash.client()
        truncation = (dash.feed.cluster.get("settings") or {}).get("truncation")
        return dash.room.ask(live_read(node_arg(dash, args), _index(args), truncation))
    if args.get("replay_step") is not None:  # a replayed scenario: the questions of its step (from 1)
        try:
            return dash.room.ask(dash.replayed.questions[int(args["replay_step"]) - 1][int(args.get("n", 0))])
        except (AttributeError, TypeError, ValueError, IndexError):
            raise ValueError(say("no question {n} at this step", n=repr(args.get("n")))) from None
    guide = dash.guide
    questions = guide.questions() if guide is not None else []
    if not questions:
        raise RuntimeError(say("no question to ask here: run a guided scenario to a step that has one, or ask "
                               "about a read"))
    try:
        return dash.room.ask(questions[int(args.get("n", 0))])
    except (TypeError, ValueError, IndexError):
        raise ValueError(say("no question {n} at this step", n=repr(args.get("n")))) from None


def question_close(dash, args: dict) -> dict:
    """No more answers; the step plays (the guide's next step, or the read), then the reveal."""
    asked = dash.room.close()
    source, guide = asked.question.source, dash.guide
    if source.get("live"):
        return {"ok": True, "question": _reveal_read(dash, asked)}
    if source.get("replay"):  # the instructor's page plays the step, then asks for the reveal (question_reveal)
        return {"ok": True, "question": dash.room.view(asked), "play_to": dash.replayed.end_of(source["step"])}
    if guide is not None and guide.state().get("name") == source["scenario"] and guide.run is not None \
            and guide.run.next_step + 1 == source["step"] and not guide.busy:
        guide.next()  # reveal_after_step reveals when the step is done
        return {"ok": True, "question": dash.room.view(asked)}
    return {"ok": True, "question": dash.room.reveal(asked, asked.question.right)}


def question_reveal(dash, args: dict) -> dict:
    """A replayed step has played: the reveal, with what the run showed at the step's end."""
    asked = dash.room.shown
    if asked is None or asked.state != CLOSED or not asked.question.source.get("replay"):
        raise RuntimeError(say("no question is waiting for its step to play"))
    k = asked.question.source["step"]
    end, start = dash.replayed.end_of(k), dash.replay.steps()[k - 1]["start"]
    before, after = dash.replay.fold_at(start - 1).status(), dash.replay.fold_at(end).status()
    stage = outcome(asked.question.ask, after)
    reason = why(asked.question.ask, before, after, dash.replay.events[start - 1:end],
                 asked.question.source.get("truncation"))  # from the run the room watched
    return {"ok": True, "question": dash.room.reveal(asked, asked.question.right, stage, reason)}


def reveal_after_step(dash, state: dict) -> None:
    """The guide finished a step: when a closed question was about it, reveal it, with what the stage showed."""
    asked = dash.room.shown
    if asked is None or asked.state != CLOSED or state.get("busy") or not state.get("active"):
        return
    source = asked.question.source
    if source.get("scenario") != state.get("name") or state.get("done") != source.get("step"):
        return
    watched, reason = dash.guide.watched, None
    try:
        stage = outcome(asked.question.ask, dash.guide.driver.status())
    except Exception:  # the cluster could not say: the lab's answer stands alone
        stage = None
    if watched is not None and watched.get("step") == source.get("step"):  # why, from what the room watched
        reason = why(asked.question.ask, watched["before"], watched["after"], watched["events"],
                     source.get("truncation"))
    dash.room.reveal(asked, asked.question.right, stage, reason)


def _reveal_read(dash, asked) -> dict:
    """Make the read; the right answer is the lab's rule applied to the mark the node reported with its answer."""
    ask = asked.question.ask
    try:
        answer = dash.client().read(ask.index, ask.node)
    except ControlError:
        answer = {"ok": False, "refusal": UNREACHABLE}
    if answer.get("refusal") in (NODE_DOWN, UNREACHABLE) or answer.get("high_water_mark") is None:
        right = stage = DOWN  # nobody answered: by the rule too, a node that is down serves nothing
    else:
        right = SERVED if 1 <= ask.index <= int(answer["high_water_mark"]) else REFUSED
        stage = SERVED if answer.get("ok") else REFUSED
    return dash.room.reveal(asked, asked.question.values.index(right), stage)


def _index(args: dict) -> int:
    try:
        index = int(args.get("index"))
    except (TypeError, ValueError):
        raise ValueError(say("read needs an index (a whole number from 1)")) from None
    if index < 1:
        raise ValueError(say("indexes start at 1"))
    return index


ROOM = {  # action -> run(dashboard, args)
    "start_cluster": start_cluster,
    "replay_open": lambda dash, args: {"ok": True, "replay": dash.open_replay(str(args.get("dir", "")))},
    "room_lang": lambda dash, args: dash.set_room_lang(args.get("lang")),
    "question_ask": question_ask,
    "question_close": question_close,
    "question_reveal": question_reveal,
    "question_dismiss": lambda dash, args: dash.room.dismiss(),
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
    if what == "next" and dash.room.shown is not None and dash.room.shown.state == OPEN \
            and dash.room.shown.question.source.get("step") == (guide.run.next_step + 1 if guide.run else None):
        return question_close(dash, args)  # Next with a question open on this step: closed, then the step plays
    if what in ("next", "back", "stop"):
        return {"ok": True, "guide": guide_for_pages(getattr(guide, what)())}
    if what == "state":
        return {"ok": True, "guide": guide_for_pages(guide.state())}
    raise ValueError(say("unknown guide action {action}", action=repr(what)))


def _replace_question(dash):
    """What to ask before a guided scenario replaces the live cluster: nothing when it holds no entry and
    runs no other scenario (nothing the room has built is lost)."""
    entries = max((n.get("log_end") or 0 for n in _nodes_now(dash)), default=0)
    running = dash.guide.scenario is not None
    if not entries and not running:
        return None
    return say("Starting the scenario replaces the live cluster (log end {entries}): start it?",
               entries=entries)


def _nodes_now(dash) -> list[dict]:
    """The nodes as the cluster answers now: the pages' feed can lag a write just acknowledged by a frame or more
    (a scenario started right after it would replace the room's entry without asking)."""
    try:
        return list(dash.client().state(log=0)["nodes"])
    except (RuntimeError, ControlError, OSError, KeyError, TypeError):
        return list(dash.feed.nodes.values())


def guide_for_pages(state: dict) -> dict:
    """The guide's state with the scripts' checks in the room's words (and sayable in any language)."""
    if state.get("outcomes"):
        state = {**state, "outcomes": [{**o, "name": command_text(o.get("name") or "")}
                                       for o in state["outcomes"]]}
    return state
