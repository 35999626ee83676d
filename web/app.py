"""The dashboard: a Flask + Flask-SocketIO app built by `create_app(config)`, what it holds, and its HTTP routes.

It shows a live cluster (through the supervisor's control API only) or replays a trace directory. A background
task polls the control API and pushes at most FRAME_HZ frames a second to every page (web.frames): a snapshot on
connect, then deltas. Controls arrive as Socket.IO `control` events (web.sockets) or POST
/api/dashboard/control/<action>, and run through the table of web.actions; the answer goes back to the page that
asked.

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
from flask_socketio import SocketIO

from lab import i18n
from lab.i18n import LANGUAGES, PSEUDO, localize, say
from lab.processes.client import ControlClient, ControlError
from lab.core.reasons import because
from web.actions import VIEWERS_ONLY, guide_for_pages, perform, reveal_after_step
from web.frames import LOG_WINDOW, SEQUENCE_EVENTS, localize_tree, localized_frame, replay_frame
from web.live import LiveFeed, for_watchers, merged
from web.room import Room
from web.sockets import socket_handlers
from web import scripts
from web.kinds import FEED_KINDS

DEFAULTS = {
    "CONTROL_URL": None,  # the supervisor's control API (live mode)
    "CONTROL_TOKEN": None,  # the cluster's token for it (RUN_DIR/cluster.json), which every change needs
    "CLUSTER_HOST": None,  # an object that can start and stop clusters (hwm-lab demo); see web.cluster
    "REPLAY_DIR": None,  # a trace directory (replay mode)
    "EXPLORE_DIR": None,  # a counterexample to explore (hwm-lab replay DIR --explore): replay mode, its explorer open
    "ASYNC_MODE": "eventlet",  # or "threading"
    "HOST": "127.0.0.1",
    "PORT": None,  # set by the server once it has bound, for the origin check
    "TOKEN": None,  # instructor token; generated when HOST is not loopback
    "ALLOWED_ORIGINS": None,  # extra origins allowed to open a Socket.IO connection
    "FRAME_HZ": 20,
    "EVENT_CAP": 200,  # most events one frame carries; the rest are counted by type
    "WATCHER_FRAMES_EVERY": 2,  # a watching page is sent one frame for this many of the instructor's (merged)
    "WATCHER_EVENT_CAP": 25,  # ... to a page that only watches (a student's in a classroom: 200 of them share one
    # wifi, and nobody reads 2,000 events a second): every rare event still, the newest routine ones, the rest counted
    "LOG_WINDOW": LOG_WINDOW,  # newest entries per node sent to the page
    "AUTOSTART": True,  # start polling when the first page connects (tests drive tick() by hand)
    "WRITE_TIMEOUT": 10.0,
    "LANGUAGE": None,  # the room's language to start with (hwm-lab demo --lang); None: each browser's own
    "OFFLOAD": None,  # runs a long computation (a scenario's model) off the event loop: eventlet's tpool.execute,
    # given by the entry point (web.serve); None: in the calling background thread (threading)
}
LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1"}
MAX_BODY = 64 * 1024  # a control from the page is a few small fields
SEQUENCE_ROWS = 1500  # the sequence view of a replay draws at most this many rows (the newest): a whole scenario's


def explorable(run_dir) -> bool:
    """A trace the explorer can branch from: a counterexample's (its script beside it, `hwm-lab explore --out`)."""
    from lab.explore.branch import find_script

    try:
        find_script(Path(run_dir))
    except ValueError:
        return False
    return True


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
    _drawings(app, dashboard)
    socket_handlers(socketio, dashboard)
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
        self.held: dict | None = None  # the live frames not yet sent to the watching pages, merged (emit_live)
        self.held_frames = 0
        self._latest_state = None  # (client, state, error) from the state reader, when it runs
        self.replay = None
        self._replay_history = None  # (the replay, its clients' history): a replay is read once
        self.replayed = None  # the replay's questions (web.questions.Replayed)
        self.exploring = None  # the counterexample being explored (web.explorer), whose trace is the replay
        self.guide = None
        self.guided = False  # the cluster on the stage is a guided scenario's (its strategy and fsync are the script's)
        self.room_settings: dict | None = None  # fsync and truncation the room chose (its first cluster's, or as
        # applied by hand): what a new cluster is started with, never a guided scenario's own
        replaying = bool(app.config["REPLAY_DIR"] or app.config["EXPLORE_DIR"])
        self.lead = {"mode": "replay" if replaying else "live", "position": 0}  # the instructor's view
        self.room_lang = app.config["LANGUAGE"]  # the language pages read unless they chose their own
        self.room = Room(lambda event, payload: self.emit(event, payload),
                         spawn=lambda fn: self.socketio.start_background_task(fn), sleep=self.socketio.sleep)
        url = app.config["CONTROL_URL"] or (self.host.control_url if self.host else None)
        token = app.config["CONTROL_TOKEN"] or (self.host.token if self.host else None)
        self.feed = LiveFeed(ControlClient(url, token=token) if url else None, event_cap=app.config["EVENT_CAP"],
                             log_window=app.config["LOG_WINDOW"])
        self.mode = "replay" if replaying else "live"
        if app.config["REPLAY_DIR"]:
            self.open_replay(app.config["REPLAY_DIR"])
        if app.config["EXPLORE_DIR"]:
            self.lead["position"] = self.explore("open", {"dir": app.config["EXPLORE_DIR"]})["position"]
        if self.host is not None:
            from web.guide import Guide
            self.guide = Guide(self._launch_for_guide, self._guide_changed,
                               spawn=lambda fn, *a: self.socketio.start_background_task(fn, *a),
                               wait_seconds=getattr(self.host, "wait_seconds", 10.0), sleep=self.socketio.sleep,
                               offload=app.config["OFFLOAD"])

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

    def emit_live(self, frame: dict) -> None:
        """A live frame to the pages that show the live cluster: whole to those that control it (room "live"),
        to those that only watch (room "watch") every WATCHER_FRAMES_EVERY-th frame, the ones between merged into
        it, thinned (web.live.for_watchers): 200 students' pages cost the dashboard less, and the instructor's
        page, which the room follows, gets its frames sooner."""
        self.emit("frame", frame, "live", localize_as=localized_frame)
        self.held = frame if self.held is None else merged(self.held, frame)
        self.held_frames += 1
        if frame["kind"] == "snapshot" or self.held_frames >= int(self.app.config["WATCHER_FRAMES_EVERY"]):
            self.flush_watchers()

    def flush_watchers(self) -> None:
        """Send the watching pages what they are owed (a tick with nothing new sends it at once)."""
        if self.held is not None:
            held, self.held, self.held_frames = self.held, None, 0
            self.emit("frame", for_watchers(held, self.app.config["WATCHER_EVENT_CAP"]), "watch",
                      localize_as=localized_frame)

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
                    self._latest_state = (client, None, because(exc))  # its reason, said in each page's language
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
                self.emit_live(frame)
                self.frames_sent += 1
            else:
                self.flush_watchers()
            return frame

    def stop(self) -> None:
        self.stopping = True
        if self.exploring is not None:  # its worker process and its traces
            self.exploring.close()

    def snapshot(self) -> dict:
        with self.lock:
            return self.feed.snapshot()

    # ---- controls (web.actions) -----------------------------------------------------------------------------

    def node_ids(self) -> list[str]:
        return list(self.feed.cluster.get("ids") or [])

    def client(self) -> ControlClient:
        if self.feed.client is None:
            raise RuntimeError(say("no cluster: this dashboard is replaying a trace"))
        return self.feed.client

    def start_cluster(self, nodes: int, settings: dict | None = None, scenario=None) -> dict:
        if self.host is None:
            raise RuntimeError(say("this dashboard is attached to a cluster it did not start; start another with "
                                   "`hwm-lab up --nodes N` and attach to it"))
        if scenario is None:  # the room's cluster: its own settings, never those a guided scenario ran with
            chosen = self.chosen_settings()
            settings = {**chosen, **(settings or {})}
            self.room_settings = {k: settings[k] for k in ("fsync", "truncation") if k in settings}
        elif not self.guided:  # what the room had before the guide took the stage, for its next cluster
            self.room_settings = self.chosen_settings()
        url = self.host.start(nodes, settings=settings, scenario=scenario)
        with self.lock:
            self.feed.reset(ControlClient(url, token=self.host.token))
            self.emit_live(self.feed.snapshot())
        self.guided = scenario is not None
        if scenario is None and self.guide is not None:
            self.guide.cluster_replaced()  # the guided run's cluster is gone: its caption and steps go with it
        return {"ok": True, "control_url": url, "nodes": nodes}

    def chosen_settings(self) -> dict:
        """The fsync and truncation the room chose: as it applied them, else those of the cluster on the stage unless
        a guided scenario started it."""
        if self.room_settings is not None:
            return dict(self.room_settings)
        if self.guided:
            return {}
        return {k: v for k, v in (self.feed.cluster.get("settings") or {}).items() if k in ("fsync", "truncation")}

    def settings_chosen(self, chosen: dict) -> None:
        """The room applied settings by hand: a new cluster starts with them (a guided scenario's included)."""
        picked = {k: v for k, v in chosen.items() if k in ("fsync", "truncation")}
        if picked:
            self.room_settings = {**self.chosen_settings(), **picked}

    # ---- guided scenarios -----------------------------------------------------------------------------------

    def _launch_for_guide(self, scenario):
        self.start_cluster(scenario.nodes, {"truncation": scenario.truncation}, scenario=scenario)
        return self.host.driver(scenario)

    def _guide_changed(self, state: dict) -> None:
        self.emit("guide", guide_for_pages(state))
        reveal_after_step(self, state)  # a question closed on the step that just played is revealed

    # ---- replay ---------------------------------------------------------------------------------------------

    def open_replay(self, run_dir: str, exploring=None) -> dict:
        """Open a trace directory as the replay (`exploring`: the explorer whose branch it is the trace of)."""
        from lab.ports.trace import TraceError
        from web.fold import Replay

        path = Path(run_dir).expanduser()
        try:
            replay = Replay(path)
        except TraceError as exc:
            raise ValueError(exc.args[0]) from None  # (a Reason: the page says it in its language)
        except OSError as exc:
            raise ValueError(say("cannot read {path}: {error}", path=str(path),
                                 error=exc.strerror or str(exc))) from None
        from web.questions import Replayed

        offload = self.config["OFFLOAD"]  # (the scenario's model, off the event loop)
        replayed = offload(Replayed, replay) if offload else Replayed(replay)
        with self.lock:
            if self.exploring is not None and self.exploring is not exploring:
                self.exploring.close()
            self.replay, self.replayed, self.exploring = replay, replayed, exploring
        return self.replay_info()

    def replay_info(self) -> dict:
        """The replay as the pages are told it: a step the room may be asked about keeps its narration out (the
        frames bring it once the step plays: web.frames.replay_frame)."""
        info = self.replay.info()
        asks = self.replayed.questions if self.replayed is not None else []
        info["steps"] = [{**step, "text": ""} if k < len(asks) and asks[k] else step
                         for k, step in enumerate(info["steps"])]
        return info

    # ---- the explorer (web.explorer) ------------------------------------------------------------------------

    def explore(self, action: str, args: dict) -> dict:
        """open (a counterexample folder or script, `dir`, at step `at`), go (to step `at`), take (the choice
        `words`) or save: the panel's view, and the replay's position of the state shown."""
        from web.explorer import Exploring

        exploring = self.exploring
        if action == "open":
            at = _whole(args["at"]) if args.get("at") is not None else None
            exploring = Exploring(str(args.get("dir") or ""), at)
        elif exploring is None:
            raise ValueError(say("no counterexample is open: open one with hwm-lab replay DIR --explore"))
        elif action == "go":
            exploring.ask("go", at=_whole(args.get("at")))
        elif action == "take":
            words = args.get("words")
            if not isinstance(words, list) or not words or not all(isinstance(w, str) for w in words):
                raise ValueError(say("take a choice: its words, as the panel lists them"))
            exploring.ask("take", words=words)
        elif action == "save":
            exploring.ask("save")
        elif action != "view":
            raise ValueError(say("unknown explorer action {action}", action=repr(action)))
        if action in ("open", "take"):
            try:
                self.open_replay(str(exploring.build()), exploring)
            except Exception:
                if action == "open":
                    exploring.close()
                raise
        return {"ok": True, "explore": exploring.panel(), "position": exploring.position(self.replay.steps())}

    def replay_frame(self, position: int | None = None, at_time: float | None = None) -> dict:
        if self.replay is None:
            raise RuntimeError(say("no trace is open"))
        return replay_frame(self.replay, position, at_time, log_window=self.config["LOG_WINDOW"])

    def sequence(self, mode: str | None, position: int | None, seconds: float | None, heartbeats: bool, lang: str,
                 width: int | None = None) -> str:
        """The sequence view's SVG, `width` pixels wide: the replay up to its cursor, or the live cluster's last
        seconds (None: all of the run the feed keeps, a whole scenario)."""
        from lab.i18n.sequence import sequence_svg

        width = max(300, min(int(width), 4000)) if width else None
        replay = self.replay
        if mode == "replay" and replay is not None:
            position = max(0, min(int(position or 0), len(replay)))
            start = max(0, position - SEQUENCE_EVENTS)
            ids = sorted(replay.fold_at(position).nodes)
            return sequence_svg(replay.events[start:position + SEQUENCE_EVENTS], upto=position - start, nodes=ids,
                                heartbeats=heartbeats, lang=lang, width=width, max_rows=SEQUENCE_ROWS)
        with self.lock:
            events = self.feed.last_seconds(max(1.0, min(float(seconds), 120.0)) if seconds else None, heartbeats)
            ids = list(self.feed.cluster.get("ids") or [])
        return sequence_svg(events, nodes=ids or None, heartbeats=heartbeats, lang=lang, width=width,
                            max_rows=SEQUENCE_ROWS)

    def history(self, mode: str | None, lang: str) -> str:
        """The clients' history as intervals (lab/i18n/intervals.py): of the whole replay, or of the live run as far
        as the feed keeps it."""
        from lab.harness.history import check
        from lab.i18n.intervals import intervals_svg

        if mode == "replay" and self.replay is not None:
            if self._replay_history is None or self._replay_history[0] is not self.replay:
                self._replay_history = (self.replay, check(self.replay.events))
            return intervals_svg(self._replay_history[1], lang=lang)
        with self.lock:
            events = self.feed.last_seconds(None, False)
        return intervals_svg(check(events), lang=lang)

    # ---- pages ----------------------------------------------------------------------------------------------

    def hello(self, can_control: bool, mode: str | None = None, follow: bool = False, seat: str = "") -> dict:
        from web.guide import catalog

        mode = mode or self.mode
        return {"mode": mode, "live_available": self.feed.client is not None, "can_control": can_control,
                "question": self.room.view(), "answered": self.room.mine(seat),
                "token_required": self.token is not None, "follow": follow, "room_lang": self.room_lang,
                "frame_hz": self.config["FRAME_HZ"], "owns_cluster": self.host is not None,
                "scenarios": catalog() if self.guide else [],
                "guide": guide_for_pages(self.guide.state()) if self.guide else None,
                "replay": {**self.replay_info(), "asks": self.replayed.prompts(),
                           "explorable": self.exploring is None and explorable(self.replay.run_dir)}
                if self.replay and mode == "replay" else None,
                "explore": self.exploring.panel() if self.exploring is not None and mode == "replay" else None}


def _whole(value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ValueError(say("a step is a whole number, not {value}", value=repr(value))) from None


def _drawings(app: Flask, dashboard: Dashboard) -> None:
    @app.get("/history.svg")
    def history():
        """The clients' history: each operation an interval on a time axis, stale reads marked (mode=replay: the
        replay's whole run; else the live run as far as the feed keeps it)."""
        svg = dashboard.history(request.args.get("mode"), dashboard.request_lang())
        return Response(svg, mimetype="image/svg+xml", headers={"Cache-Control": "no-store"})


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
                "languages": dict(languages), "messages": i18n.for_page(lang), "plurals": i18n.plurals_for_page(lang),
                "kinds": i18n.event_names(lang)}
        return render_template("index.html", mode=dashboard.mode, lang=lang, languages=languages, i18n=page,
                               kinds=FEED_KINDS, modules=scripts.MODULES, entry=scripts.ENTRY, prefix=scripts.PREFIX,
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
        last `seconds` (whole=1: the whole run, as far as the feed keeps it); heartbeats=1 draws them too; width=N
        spreads it over N pixels; download=1 saves it as a file."""
        whole = request.args.get("whole") == "1"
        svg = dashboard.sequence(request.args.get("mode"), request.args.get("position", type=int),
                                 None if whole else request.args.get("seconds", default=10.0, type=float),
                                 request.args.get("heartbeats") == "1", dashboard.request_lang(),
                                 request.args.get("width", type=int))
        headers = {"Cache-Control": "no-store"}
        if request.args.get("download") == "1":
            headers["Content-Disposition"] = 'attachment; filename="sequence.svg"'
        return Response(svg, mimetype="image/svg+xml", headers=headers)

    @app.get("/api/dashboard/answers.csv")
    def answers_csv():
        """The lecture's answers, for the instructor only (the token, as for a control)."""
        if not dashboard.may_control(request.headers.get("X-HWM-Token") or request.args.get("token")):
            return jsonify(ok=False, error=localize(VIEWERS_ONLY, dashboard.request_lang())), 403
        name = time.strftime("answers-%Y%m%d-%H%M.csv")
        return Response(dashboard.room.csv(), mimetype="text/csv",
                        headers={"Content-Disposition": f'attachment; filename="{name}"', "Cache-Control": "no-store"})
    @app.get("/replay.html")
    def replay_file():
        """The open replay as one HTML file that plays from disk (web.onefile): the replay page's "save as one
        file"."""
        from web.onefile import build

        replay = dashboard.replay
        if replay is None:
            return jsonify(ok=False, error=localize(say("no trace is open"), dashboard.request_lang())), 404
        name = "".join(c if c.isalnum() or c in "-_." else "_" for c in str(replay.meta.get("run") or "replay"))
        return Response(build(replay).html, mimetype="text/html",
                        headers={"Content-Disposition": f'attachment; filename="{name}.html"',
                                 "Cache-Control": "no-store"})

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
        answer = perform(dashboard, action, body if isinstance(body, dict) else {})
        return jsonify(localize_tree(answer, lang)), 200 if answer.get("ok") else 400
