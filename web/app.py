"""The dashboard: a Flask + Flask-SocketIO app built by `create_app(config)`.

It shows a live cluster (through the supervisor's control API only) or replays a trace directory. A background
task polls the control API and pushes at most FRAME_HZ frames a second to every page: a snapshot on connect,
then deltas. Controls arrive as Socket.IO `control` events (or POST /api/dashboard/control/<action>) and are
forwarded to the control API; the answer goes back to the page that asked.

The room follows the instructor: pages without control rights follow by default (room "follow"), so when a
page with the token opens a trace, scrubs or plays it, or goes back to the live view, they do the same.

Each page reads one language (lab.i18n): the one it asked for (`?lang=`, the picker), else the room's (set by
the instructor, or `hwm-lab demo --lang`), else its browser's Accept-Language, else English. Every sentence the
server makes is a catalogue Text; what goes to a room is said in the language of each of its pages.

Eventlet is never imported here: the entry point (web.cli) monkey-patches when ASYNC_MODE is "eventlet".
"""

from __future__ import annotations

import ipaddress
import secrets
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

from flask import Flask, Response, abort, g, jsonify, render_template, request
from flask_babel import Babel, Domain
from flask_socketio import SocketIO, join_room, leave_room

from lab import i18n
from lab.ports.cluster import MAX_DELAY_MS
from lab.core.config import FSYNC_POLICIES, MAX_NODES, TRUNCATION_STRATEGIES
from lab.i18n import LANGUAGES, PSEUDO, Text, localize, say
from lab.i18n.phrases import heard
from lab.processes.client import ControlClient, ControlError
from web.live import LiveFeed, cut_off, shape_node
from web.narrate import answer_error, humane

DEFAULTS = {
    "CONTROL_URL": None,  # the supervisor's control API (live mode)
    "CONTROL_TOKEN": None,  # the cluster's token for it (RUN_DIR/cluster.json), which every change needs
    "CLUSTER_HOST": None,  # an object that can start and stop clusters (hwm-lab demo); see web.cluster
    "REPLAY_DIR": None,  # a trace directory (replay mode)
    "ASYNC_MODE": "eventlet",  # or "threading"
    "HOST": "127.0.0.1",
    "PORT": None,  # set by the server once it has bound, for the origin check
    "TOKEN": None,  # instructor token; generated when HOST is not loopback
    "ALLOWED_ORIGINS": None,  # extra origins allowed to open a Socket.IO connection
    "FRAME_HZ": 20,
    "EVENT_CAP": 200,  # most events one frame carries; the rest are counted by type
    "LOG_WINDOW": 48,  # newest entries per node sent to the page
    "AUTOSTART": True,  # start polling when the first page connects (tests drive tick() by hand)
    "WRITE_TIMEOUT": 10.0,
    "LANGUAGE": None,  # the room's language to start with (hwm-lab demo --lang); None: each browser's own
}
LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1"}
MAX_BODY = 64 * 1024  # a control from the page is a few small fields
ACTIONS_NODE = ("kill", "restart", "pause", "resume", "disk-full", "disk-ok", "fsync-fail")
SEQUENCE_EVENTS = 1500  # the sequence view of a replay draws at most this many events before its cursor
VIEWERS_ONLY = say("viewers can only watch: control actions need the instructor token")


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def create_app(config: dict | None = None) -> Flask:
    app = Flask(__name__)
    app.config.update(DEFAULTS)
    app.config.update(config or {})
    if app.config["ASYNC_MODE"] not in ("eventlet", "threading"):
        raise ValueError(f"ASYNC_MODE must be 'eventlet' or 'threading', not {app.config['ASYNC_MODE']!r}")
    if app.config["TOKEN"] is None and not is_loopback(app.config["HOST"]):
        app.config["TOKEN"] = secrets.token_urlsafe(16)
    app.config.setdefault("SECRET_KEY", secrets.token_hex(16))
    app.config.setdefault("MAX_CONTENT_LENGTH", MAX_BODY)  # a bigger body is refused from its length (413)
    if app.config["LANGUAGE"] is not None and app.config["LANGUAGE"] not in LANGUAGES:
        raise ValueError(f"LANGUAGE is one of {', '.join(LANGUAGES)}, not {app.config['LANGUAGE']!r}")
    socketio = SocketIO()
    dashboard = Dashboard(app, socketio)
    babel = Babel(app, locale_selector=lambda: "en" if dashboard.request_lang() == PSEUDO else dashboard.request_lang())
    babel.domain_instance = CatalogueDomain(dashboard)
    socketio.init_app(app, async_mode=app.config["ASYNC_MODE"],
                      cors_allowed_origins=lambda origin, environ=None: dashboard.origin_ok(
                          origin, (environ or {}).get("HTTP_HOST")),
                      max_http_buffer_size=MAX_BODY)
    app.extensions["hwm_dashboard"] = dashboard
    _routes(app, dashboard)
    _socket_handlers(socketio, dashboard)
    return app


class CatalogueDomain(Domain):
    """Flask-Babel's translations taken from the .po catalogues as lab.i18n reads them (nothing compiled), in the
    language of the page that asks (which may be the pseudo-language, which no Babel locale names)."""

    def __init__(self, dashboard: "Dashboard"):
        super().__init__()
        self.dashboard = dashboard

    def get_translations(self):
        return i18n.catalogue(self.dashboard.request_lang()).gnu()


class Dashboard:
    """What one dashboard app holds: the live feed or the replay, the viewers' rights, the guide."""

    def __init__(self, app: Flask, socketio: SocketIO):
        self.app = app
        self.socketio = socketio
        self.config = app.config
        self.token = app.config["TOKEN"]
        self.host = app.config["CLUSTER_HOST"]
        self.lock = threading.RLock()
        self.viewers: dict[str, dict] = {}
        self.running = False
        self.stopping = False
        self.frames_sent = 0
        self._latest_state = None  # (client, state, error) from the state reader, when it runs
        self.replay = None
        self.guide = None
        self.lead = {"mode": "replay" if app.config["REPLAY_DIR"] else "live", "position": 0}  # the instructor's view
        self.room_lang = app.config["LANGUAGE"]  # the language pages read unless they chose their own
        url = app.config["CONTROL_URL"] or (self.host.control_url if self.host else None)
        token = app.config["CONTROL_TOKEN"] or (self.host.token if self.host else None)
        self.feed = LiveFeed(ControlClient(url, token=token) if url else None, event_cap=app.config["EVENT_CAP"],
                             log_window=app.config["LOG_WINDOW"])
        self.mode = "replay" if app.config["REPLAY_DIR"] else "live"
        if app.config["REPLAY_DIR"]:
            self.open_replay(app.config["REPLAY_DIR"])
        if self.host is not None:
            from web.guide import Guide
            self.guide = Guide(self._launch_for_guide, self._guide_changed,
                               spawn=lambda fn, *a: self.socketio.start_background_task(fn, *a),
                               wait_seconds=getattr(self.host, "wait_seconds", 10.0))

    # ---- security -------------------------------------------------------------------------------------------

    def origin_ok(self, origin: str | None, host_header: str | None) -> bool:
        """Only the dashboard's own pages may open a Socket.IO connection or post controls."""
        if not origin:
            return True  # not a browser page (test clients, curl); the token still guards controls
        allowed = self.config["ALLOWED_ORIGINS"] or ()
        if origin in allowed:
            return True
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return False
        port = self.config["PORT"]
        if is_loopback(self.config["HOST"]):
            return parts.hostname in LOOPBACK_NAMES and (port is None or parts.port == port)
        return host_header is not None and parts.netloc == host_header

    def may_control(self, token: str | None) -> bool:
        return self.token is None or (token is not None and secrets.compare_digest(str(token), self.token))

    # ---- languages ------------------------------------------------------------------------------------------

    def request_lang(self) -> str:
        """The language of the page this HTTP request is for: `?lang=`, the room's, Accept-Language, English."""
        if "hwm_lang" not in g:
            g.hwm_lang = (i18n.supported(request.args.get("lang")) or self.room_lang
                          or request.accept_languages.best_match(list(LANGUAGES)) or i18n.SOURCE)
        return g.hwm_lang

    def langs(self) -> set[str]:
        """The languages some page reads now."""
        return {v.get("lang", i18n.SOURCE) for v in list(self.viewers.values())}

    def emit(self, event: str, payload, room: str = "lang", skip_sid: str | None = None, localize_as=None) -> None:
        """Emit to every page of a room (live, follow, or every page: lang), each in its own language."""
        say_in = localize_as or localize_tree
        for lang in sorted(self.langs()):
            self.socketio.emit(event, say_in(payload, lang), to=f"{room}:{lang}", skip_sid=skip_sid)

    def set_room_lang(self, lang) -> dict:
        if lang not in LANGUAGES:
            raise ValueError(say("the room reads one of {languages}, not {language}", languages=", ".join(LANGUAGES),
                                 language=repr(lang)))
        self.room_lang = lang
        self.emit("room_lang", {"lang": lang})  # pages that did not choose their language reload in it
        return {"ok": True, "room_lang": lang}

    # ---- live -----------------------------------------------------------------------------------------------

    def ensure_running(self) -> None:
        with self.lock:
            if self.running or not self.config["AUTOSTART"] or self.feed.client is None:
                return
            self.running = True
        self.socketio.start_background_task(self._state_loop)
        self.socketio.start_background_task(self._loop)

    def _state_loop(self) -> None:
        """Reads /api/state on its own beat: a slow answer (nodes busy) must not hold the events back."""
        period = 1.0 / float(self.config["FRAME_HZ"])
        while not self.stopping:
            client = self.feed.client
            started = time.monotonic()
            if client is not None:
                try:
                    self._latest_state = (client, client.state(log=self.config["LOG_WINDOW"]), None)
                except ControlError as exc:
                    self._latest_state = (client, None, str(exc))
                except Exception as exc:  # never let the reader die: the pages would freeze
                    self.app.logger.exception("reading the cluster state failed: %s", exc)
            self.socketio.sleep(max(0.0, period - (time.monotonic() - started)))

    def _loop(self) -> None:
        period = 1.0 / float(self.config["FRAME_HZ"])
        due = time.monotonic()
        while not self.stopping:
            try:
                self.tick()
            except Exception as exc:  # keep the pages alive; the error is shown in them
                self.app.logger.exception("dashboard frame failed: %s", exc)
            due += period
            delay = due - time.monotonic()
            if delay < 0:  # fell behind (a slow poll): start counting again rather than bursting
                due, delay = time.monotonic(), 0
            self.socketio.sleep(delay)

    def tick(self) -> dict | None:
        """One frame: poll the control API once and push what changed to every page (at most one emit)."""
        if self.feed.client is None:
            return None
        with self.lock:
            latest = self._latest_state
            if latest is not None and latest[0] is self.feed.client:
                frame = self.feed.poll(latest[1], latest[2])
            else:
                frame = self.feed.poll()
            if frame is not None:
                self.emit("frame", frame, "live", localize_as=localized_frame)
                self.frames_sent += 1
            return frame

    def stop(self) -> None:
        self.stopping = True

    def snapshot(self) -> dict:
        with self.lock:
            return self.feed.snapshot()

    # ---- controls -------------------------------------------------------------------------------------------

    def node_ids(self) -> list[str]:
        return list(self.feed.cluster.get("ids") or [])

    def _node_arg(self, args: dict, key: str = "node", optional: bool = False) -> str | None:
        value = args.get(key)
        if value in (None, "", "auto", "leader") and optional:
            return None
        if value not in self.node_ids():
            if self.node_ids():
                raise ValueError(say("no node {node} in this cluster (nodes: {nodes})", node=repr(value),
                                     nodes=", ".join(self.node_ids())))
            raise ValueError(say("no node {node} in this cluster (nodes: none)", node=repr(value)))
        return value

    def perform(self, action: str, args: dict) -> dict:
        """Run one control action; answer a dict for the page ({"ok": False, "error": ...} when refused)."""
        try:
            answer = self._perform(action, args or {})
        except (ValueError, TypeError, RuntimeError, ControlError) as exc:
            answer = {"ok": False, "error": said(exc)}
        answer.setdefault("ok", True)
        answer["action"] = action
        return answer

    def _client(self) -> ControlClient:
        if self.feed.client is None:
            raise RuntimeError(say("no cluster: this dashboard is replaying a trace"))
        return self.feed.client

    def _perform(self, action: str, args: dict) -> dict:  # noqa: C901 (a table of actions)
        if action in (*ACTIONS_NODE, "cut", "heal", "heal_all", "write", "read", "settings", "clocks", "drop"):
            self._client()  # refuses first when there is no cluster at all
        if action in ACTIONS_NODE:
            node = self._node_arg(args)
            return self._client().post(f"/api/nodes/{node}/{action}")
        if action in ("cut", "heal"):
            src, dst = self._node_arg(args, "src"), self._node_arg(args, "dst")
            if src == dst:
                raise ValueError(say("a link joins two different nodes"))
            return self._client().post(f"/api/links/{action}",
                                       {"src": src, "dst": dst, "one_way": bool(args.get("one_way", False))})
        if action == "heal_all":
            return self._client().post("/api/links/heal", {})
        if action == "drop":
            return self._drop(self._node_arg(args, "src"), self._node_arg(args, "dst"), args.get("ms"))
        if action == "clocks":
            return self._client().post("/api/ticks", {"hold": bool(args.get("hold"))})
        if action == "write":
            payload = str(args.get("payload", "")).strip()
            if not payload or len(payload) > 200:
                raise ValueError(say("write a payload of 1 to 200 characters"))
            # In slow motion a write needs two trips per follower: wait long enough for them (and no longer).
            delay = float((self.feed.cluster.get("settings") or {}).get("delay_ms") or 0) / 1000.0
            body = {"payload": payload, "timeout": min(self.config["WRITE_TIMEOUT"], max(5.0, 3 * delay + 3))}
            node = self._node_arg(args, optional=True)
            if node:
                body["node"] = node
            answer = self._client().post("/api/write", body, timeout=self.config["WRITE_TIMEOUT"] + 2)
            if answer.get("error"):
                answer["error"] = answer_error(answer)
            return answer
        if action == "read":
            try:
                index = int(args.get("index"))
            except (TypeError, ValueError):
                raise ValueError(say("read needs an index (a whole number from 1)")) from None
            if index < 1:
                raise ValueError(say("indexes start at 1"))
            answer = self._client().post("/api/read", {"index": index, "node": self._node_arg(args)})
            if answer.get("error"):
                answer["error"] = answer_error(answer)
            return answer
        if action == "settings":
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
            return self._client().post("/api/settings", body)
        if action == "start_cluster":
            nodes = int(args.get("nodes", 3))
            if not 1 <= nodes <= MAX_NODES:
                raise ValueError(say("a cluster here has 1 to {most} nodes", most=MAX_NODES))
            return self.start_cluster(nodes, {k: args[k] for k in ("fsync", "truncation") if args.get(k)})
        if action.startswith("guide_"):
            return self._guide(action[len("guide_"):], args)
        if action == "replay_open":
            return {"ok": True, "replay": self.open_replay(str(args.get("dir", "")))}
        if action == "room_lang":
            return self.set_room_lang(args.get("lang"))
        raise ValueError(say("unknown action {action}", action=repr(action)))

    def _drop(self, src: str, dst: str, ms) -> dict:
        """Drop the message now in flight from src to dst: the link is cut one way until it would have arrived.
        (Nodes drop what a cut link holds when they send it, so nothing else is needed; messages sent on that
        link in the meantime are lost too, as on a real network.)"""
        try:
            ms = float(ms)
        except (TypeError, ValueError):
            raise ValueError(say("drop needs the time the message has left in flight (ms)")) from None
        if not 0 < ms <= 10_000:
            raise ValueError(say("a message in flight arrives within 10 s"))
        if src == dst:
            raise ValueError(say("a link joins two different nodes"))
        if any(l["src"] == src and l["dst"] == dst and l.get("cut") for l in self.feed.cluster.get("links") or []):
            raise ValueError(say("the link {src} → {dst} is already cut: the message is lost anyway", src=src, dst=dst))
        client = self._client()
        answer = client.post("/api/links/cut", {"src": src, "dst": dst, "one_way": True})
        if answer.get("ok"):
            self.socketio.start_background_task(self._heal_after_drop, client, src, dst, ms / 1000.0 + 0.2)
        return {**answer, "src": src, "dst": dst, "ms": ms}

    def _heal_after_drop(self, client: ControlClient, src: str, dst: str, seconds: float) -> None:
        self.socketio.sleep(seconds)
        try:
            client.post("/api/links/heal", {"src": src, "dst": dst, "one_way": True})
        except ControlError as exc:
            self.app.logger.warning("healing %s -> %s after a drop failed: %s", src, dst, exc)

    def start_cluster(self, nodes: int, settings: dict | None = None, scenario=None) -> dict:
        if self.host is None:
            raise RuntimeError(say("this dashboard is attached to a cluster it did not start; start another with "
                                   "`hwm-lab up --nodes N` and attach to it"))
        settings = {**{k: v for k, v in (self.feed.cluster.get("settings") or {}).items()
                       if k in ("fsync", "truncation")}, **(settings or {})}
        url = self.host.start(nodes, settings=settings, scenario=scenario)
        with self.lock:
            self.feed.reset(ControlClient(url, token=self.host.token))
            self.emit("frame", self.feed.snapshot(), "live", localize_as=localized_frame)
        return {"ok": True, "control_url": url, "nodes": nodes}

    # ---- guided scenarios -----------------------------------------------------------------------------------

    def _guide(self, what: str, args: dict) -> dict:
        if self.guide is None:
            raise RuntimeError(say("guided scenarios need a cluster this dashboard started (hwm-lab demo)"))
        if what == "start":
            question = self._replace_question()
            if question and not args.get("replace"):
                return {"ok": False, "confirm": question, "error": question}
            return {"ok": True, "guide": guide_for_pages(self.guide.start(str(args.get("scenario", "")),
                                                                          args.get("truncation") or None))}
        if what in ("next", "back", "stop"):
            return {"ok": True, "guide": guide_for_pages(getattr(self.guide, what)())}
        if what == "state":
            return {"ok": True, "guide": guide_for_pages(self.guide.state())}
        raise ValueError(say("unknown guide action {action}", action=repr(what)))

    def _replace_question(self):
        """What to ask before a guided scenario replaces the live cluster: nothing when it holds no entry and
        runs no other scenario (nothing the room has built is lost)."""
        entries = max((n.get("log_end") or 0 for n in self.feed.nodes.values()), default=0)
        running = self.guide.scenario is not None
        if not entries and not running:
            return None
        return say("Starting the scenario replaces the live cluster (log end {entries}): start it?",
                   entries=entries)

    def _launch_for_guide(self, scenario):
        self.start_cluster(scenario.nodes, {"truncation": scenario.truncation}, scenario=scenario)
        return self.host.driver(scenario)

    def _guide_changed(self, state: dict) -> None:
        self.emit("guide", guide_for_pages(state))

    # ---- replay ---------------------------------------------------------------------------------------------

    def open_replay(self, run_dir: str) -> dict:
        from lab.ports.trace import TraceError
        from web.fold import Replay

        path = Path(run_dir).expanduser()
        try:
            replay = Replay(path)
        except TraceError as exc:
            raise ValueError(str(exc)) from None
        except OSError as exc:
            raise ValueError(say("cannot read {path}: {error}", path=str(path), error=exc.strerror or str(exc))) from None
        with self.lock:
            self.replay = replay
        return replay.info()

    def replay_frame(self, position: int | None = None, at_time: float | None = None,
                     recent: int = 60) -> dict:
        replay = self.replay
        if replay is None:
            raise RuntimeError(say("no trace is open"))
        if at_time is not None:
            position = replay.position_at_time(float(at_time))
        position = max(0, min(int(position or 0), len(replay)))
        status = replay.fold_at(position).status()
        ids = [n["id"] for n in status["nodes"]]
        nodes = []
        for node in status["nodes"]:
            shaped = shape_node(node, self.config["LOG_WINDOW"])
            if shaped["state"] == "running" and cut_off(shaped["id"], status["links"], ids):
                shaped["state"] = "cut off"
            nodes.append(shaped)
        events = [replay.event(n) for n in range(max(1, position - recent + 1), position + 1)]
        return {"kind": "snapshot", "seq": position, "base": None, "sent": time.time(), "nodes": nodes,
                "gone": [], "cluster": {"leader": status["leader"], "settings": status["settings"],
                                        "links": status["links"], "ids": ids, "connected": True, "error": None},
                "clocks": {}, "events": events, "skipped": 0, "skipped_by_type": {}, "events_next": position + 1,
                "rate": 0, "position": position, "total": len(replay), "time": status["time"],
                "play": replay.play_time(position), "duration": replay.duration}

    def sequence(self, mode: str | None, position: int | None, seconds: float, heartbeats: bool, lang: str) -> str:
        """The sequence view's SVG: the replay up to its cursor, or the live cluster's last seconds."""
        from lab.i18n.sequence import sequence_svg

        replay = self.replay
        if mode == "replay" and replay is not None:
            position = max(0, min(int(position or 0), len(replay)))
            start = max(0, position - SEQUENCE_EVENTS)
            ids = sorted(replay.fold_at(position).nodes)
            return sequence_svg(replay.events[start:position + SEQUENCE_EVENTS], upto=position - start, nodes=ids,
                                heartbeats=heartbeats, lang=lang)
        seconds = max(1.0, min(float(seconds), 120.0))
        with self.lock:
            events = self.feed.last_seconds(seconds)
            ids = list(self.feed.cluster.get("ids") or [])
        return sequence_svg(events, nodes=ids or None, heartbeats=heartbeats, lang=lang)

    # ---- pages ----------------------------------------------------------------------------------------------

    def hello(self, can_control: bool, mode: str | None = None, follow: bool = False) -> dict:
        from web.guide import catalog

        mode = mode or self.mode
        return {"mode": mode, "live_available": self.feed.client is not None, "can_control": can_control,
                "token_required": self.token is not None, "follow": follow, "room_lang": self.room_lang,
                "frame_hz": self.config["FRAME_HZ"], "owns_cluster": self.host is not None,
                "scenarios": catalog() if self.guide else [],
                "guide": guide_for_pages(self.guide.state()) if self.guide else None,
                "replay": self.replay.info() if self.replay and mode == "replay" else None}


def guide_for_pages(state: dict) -> dict:
    """The guide's state with the scripts' checks in the room's words (and sayable in any language)."""
    if state.get("outcomes"):
        state = {**state, "outcomes": [{**o, "name": heard(o.get("name") or ""),
                                        "detail": heard(humane(o.get("detail") or ""))} for o in state["outcomes"]]}
    if state.get("error"):
        state = {**state, "error": heard(state["error"])}
    return state


def localize_tree(value, lang: str):
    """A payload with every Text in it said in `lang` (dicts and lists are copied; English is sent as it is)."""
    if lang == i18n.SOURCE:
        return value
    if isinstance(value, i18n.SPOKEN):
        return localize(value, lang)
    if isinstance(value, dict):
        return {k: localize_tree(v, lang) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [localize_tree(v, lang) for v in value]
    return value


def localized_frame(frame: dict, lang: str) -> dict:
    """A frame in `lang`: only its events' words and the cluster's error are sentences (the nodes are data)."""
    if lang == i18n.SOURCE:
        return frame
    cluster = frame.get("cluster") or {}
    if cluster.get("error"):
        cluster = {**cluster, "error": localize(heard(cluster["error"]), lang)}
    if any(n.get("exit_reason") for n in frame.get("nodes") or []):  # a node's reason for stopping is a sentence
        frame = {**frame, "nodes": [{**n, "exit_reason": localize(heard(n["exit_reason"]), lang)}
                                    if n.get("exit_reason") else n for n in frame["nodes"]]}
    return {**frame, "cluster": cluster,
            "events": [{**e, "text": localize(e["text"], lang)} if "text" in e else e for e in frame["events"]]}


def said(exc: Exception):
    """An exception's message as a Text: its own when it has one, else its English recognised when known."""
    message = exc.args[0] if exc.args else ""
    return message if isinstance(message, Text) else heard(str(exc))


def _routes(app: Flask, dashboard: Dashboard) -> None:
    @app.before_request
    def _check_host():
        # DNS rebinding: on loopback, only loopback names may address this server.
        if is_loopback(app.config["HOST"]):
            host = (request.host or "").rsplit(":", 1)[0].strip("[]")
            if host not in LOOPBACK_NAMES:
                abort(403, "this dashboard answers to 127.0.0.1 and localhost only")

    @app.get("/")
    def index():
        lang = dashboard.request_lang()
        languages = list(LANGUAGES.items()) + ([(PSEUDO, "⟦xx⟧")] if lang == PSEUDO else [])
        page = {"lang": lang, "room": dashboard.room_lang, "chosen": i18n.supported(request.args.get("lang")),
                "languages": dict(languages), "messages": i18n.for_page(lang)}
        return render_template("index.html", mode=dashboard.mode, lang=lang, languages=languages, i18n=page,
                               lang_tag={"zh": "zh-Hans", PSEUDO: "en"}.get(lang, lang))

    @app.get("/healthz")
    def healthz():
        return jsonify(ok=True, mode=dashboard.mode, frames=dashboard.frames_sent)

    @app.get("/api/dashboard/state")
    def state():
        if dashboard.feed.client is None and dashboard.replay is not None:
            return jsonify(dashboard.replay_frame(request.args.get("position", type=int) or 0))
        return jsonify(dashboard.snapshot())

    @app.get("/sequence.svg")
    def sequence():
        """The message-sequence diagram: of the replay up to `position` (mode=replay), else of the live cluster's
        last `seconds`; heartbeats=1 draws them too; download=1 saves it as a file."""
        svg = dashboard.sequence(request.args.get("mode"), request.args.get("position", type=int),
                                 request.args.get("seconds", default=10.0, type=float),
                                 request.args.get("heartbeats") == "1", dashboard.request_lang())
        headers = {"Cache-Control": "no-store"}
        if request.args.get("download") == "1":
            headers["Content-Disposition"] = 'attachment; filename="sequence.svg"'
        return Response(svg, mimetype="image/svg+xml", headers=headers)

    @app.post("/api/dashboard/control/<action>")
    def control(action):
        lang = dashboard.request_lang()
        if not dashboard.origin_ok(request.headers.get("Origin"), request.host):
            return jsonify(ok=False, error=localize(say("cross-origin request refused"), lang)), 403
        # The token first, from the header or the query: a watcher's body is never read, let alone parsed.
        token = request.headers.get("X-HWM-Token") or request.args.get("token")
        if not dashboard.may_control(token):
            return jsonify(ok=False, action=action, error=localize(VIEWERS_ONLY, lang)), 403
        body = request.get_json(silent=True) or {}
        answer = dashboard.perform(action, body if isinstance(body, dict) else {})
        return jsonify(localize_tree(answer, lang)), 200 if answer.get("ok") else 400


def _socket_handlers(socketio: SocketIO, dashboard: Dashboard) -> None:
    # Each page joins the rooms of its language ("live:es", "follow:es", "lang:es"): what a room is sent is said
    # once per language in it.
    def lang_of(sid: str) -> str:
        return dashboard.viewers.get(sid, {}).get("lang", i18n.SOURCE)

    def send(event: str, payload, sid: str) -> None:
        socketio.emit(event, localize_tree(payload, lang_of(sid)), to=sid)

    def answer(payload: dict) -> dict:  # a callback's answer, in the asking page's language
        return localize_tree(payload, lang_of(request.sid))

    @socketio.on("connect")
    def connect(auth=None):
        if not dashboard.origin_ok(request.headers.get("Origin"), request.host):
            return False
        auth = auth if isinstance(auth, dict) else {}
        can_control = dashboard.may_control(auth.get("token") or request.args.get("token"))
        lang = i18n.supported(auth.get("lang")) or dashboard.request_lang()
        # Watchers follow the instructor unless they leave; whoever holds the token leads.
        dashboard.viewers[request.sid] = {"control": can_control, "follow": not can_control, "lang": lang}
        join_room(f"lang:{lang}", sid=request.sid)
        if not can_control:
            join_room(f"follow:{lang}", sid=request.sid)
        _show(request.sid, dashboard.lead["mode"] if not can_control else dashboard.mode)
        return None

    def _show(sid: str, mode: str, position: int | None = None) -> None:
        if mode == "replay" and dashboard.replay is not None:
            _watch_replay(sid, dashboard.lead["position"] if position is None else position)
        elif dashboard.feed.client is not None or dashboard.replay is None:
            _watch_live(sid)
        else:
            _watch_replay(sid, 0)

    def _hello(sid: str, mode: str) -> dict:
        viewer = dashboard.viewers[sid]
        return dashboard.hello(viewer["control"], mode, viewer["follow"])

    def _watch_live(sid: str) -> None:
        dashboard.viewers[sid]["mode"] = "live"
        leave_room(f"replay:{lang_of(sid)}", sid=sid)
        send("hello", _hello(sid, "live"), sid)
        with dashboard.lock:  # the snapshot and the room join together: no delta can slip in between
            socketio.emit("frame", localized_frame(dashboard.feed.snapshot(), lang_of(sid)), to=sid)
            join_room(f"live:{lang_of(sid)}", sid=sid)
        dashboard.ensure_running()

    def _watch_replay(sid: str, position: int = 0) -> None:
        dashboard.viewers[sid]["mode"] = "replay"
        leave_room(f"live:{lang_of(sid)}", sid=sid)
        join_room(f"replay:{lang_of(sid)}", sid=sid)
        send("hello", _hello(sid, "replay"), sid)
        send("frame", dashboard.replay_frame(position), sid)

    def _lead(mode: str, position: int = 0) -> None:
        """An instructor changed view: every follower changes with them."""
        dashboard.lead = {"mode": mode, "position": position}
        for sid, viewer in list(dashboard.viewers.items()):
            if viewer.get("follow") and sid != request.sid:
                _show(sid, mode, position)

    @socketio.on("follow")
    def follow(message):
        message = message if isinstance(message, dict) else {}
        viewer = dashboard.viewers.get(request.sid)
        if viewer is None:
            return answer({"ok": False, "error": say("not connected")})
        viewer["follow"] = bool(message.get("on"))
        if viewer["follow"]:
            join_room(f"follow:{viewer['lang']}", sid=request.sid)
            _show(request.sid, dashboard.lead["mode"])
        else:
            leave_room(f"follow:{viewer['lang']}", sid=request.sid)
        return {"ok": True, "follow": viewer["follow"], "mode": viewer.get("mode")}

    @socketio.on("replay_open")
    def replay_open(message):
        message = message if isinstance(message, dict) else {}
        viewer = dashboard.viewers.get(request.sid, {})
        if message.get("dir"):
            if not viewer.get("control"):
                return answer({"ok": False, "error": say("opening a trace needs the instructor token")})
            try:
                dashboard.open_replay(str(message["dir"]))
            except ValueError as exc:
                return answer({"ok": False, "error": said(exc)})
        if dashboard.replay is None:
            return answer({"ok": False, "error": say("no trace is open: give a trace directory")})
        _watch_replay(request.sid)
        if viewer.get("control"):
            _lead("replay", 0)
        return answer({"ok": True, "replay": dashboard.replay.info()})

    @socketio.on("go_live")
    def go_live(*_):
        if dashboard.feed.client is None:
            return answer({"ok": False, "error": say("no live cluster: this dashboard only replays (hwm-lab replay)")})
        _watch_live(request.sid)
        if dashboard.viewers.get(request.sid, {}).get("control"):
            _lead("live")
        return {"ok": True}

    @socketio.on("disconnect")
    def disconnect(*_):
        dashboard.viewers.pop(request.sid, None)

    @socketio.on("resync")
    def resync(*_):
        if dashboard.viewers.get(request.sid, {}).get("mode", dashboard.mode) == "live":
            return localized_frame(dashboard.snapshot(), lang_of(request.sid))
        return None

    @socketio.on("control")
    def control(message):
        message = message if isinstance(message, dict) else {}
        action = str(message.get("action", ""))
        if not dashboard.viewers.get(request.sid, {}).get("control"):
            return answer({"ok": False, "action": action, "error": VIEWERS_ONLY})
        return answer(dashboard.perform(action, message.get("args") or {}))

    @socketio.on("replay_seek")
    def replay_seek(message):
        message = message if isinstance(message, dict) else {}
        try:
            frame = dashboard.replay_frame(message.get("position"), message.get("time"))
        except (RuntimeError, ValueError, TypeError) as exc:
            return answer({"ok": False, "error": said(exc)})
        viewer = dashboard.viewers.get(request.sid, {})
        if viewer.get("control") and viewer.get("mode") == "replay":
            dashboard.lead = {"mode": "replay", "position": frame["position"]}
            followed = {**frame, "playing": bool(message.get("playing")), "speed": message.get("speed")}
            dashboard.emit("frame", followed, "follow", skip_sid=request.sid, localize_as=localized_frame)
        return localized_frame(frame, lang_of(request.sid))
