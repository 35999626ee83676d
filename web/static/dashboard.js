/* HWM Lab dashboard page: takes the frames the server pushes, keeps the page's state, sends controls back, and
   lets the stage (stage.js) draw. Plain JS, no build step. Frames: a snapshot (every node) or a delta (changed
   nodes) plus the events since the last frame; the page draws at most once per animation frame whatever the
   rate at which they arrive. Every sentence comes from text.js. */
(function () {
  "use strict";
  const T = window.HWM_TEXT;
  const $ = (sel, root) => (root || document).querySelector(sel);
  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const params = new URLSearchParams(location.search);
  const token = params.get("token");
  const I18N = window.HWM_I18N || { lang: "en", chosen: null };

  // ---- state -------------------------------------------------------------------------------------------
  const S = {
    mode: document.body.dataset.mode || "live",
    canControl: false, tokenRequired: false, ownsCluster: false, liveAvailable: true, follow: false,
    seq: null, nodes: {}, clocks: {}, cluster: { ids: [], links: [], settings: {}, leader: null, connected: false },
    feed: [], skipped: 0, skippedByType: {}, rate: 0, eventsNext: 1, frameHz: 10,
    selected: null, dirty: true, guide: null, scenarios: [], showHeartbeats: true,
    replay: null, position: 0, total: 0, time: 0, play: 0, duration: 0, playing: false, playTime: 0,
    question: null, myAnswer: null,  // the question put to the room (web/room.py), and this page's answer to it
    playUntil: null,  // a replayed step being played for a question's reveal: where it ends
  };
  // For bench/dashboard.py and the browser tests: what arrived and when, and how long each drawing took
  // (recording is off unless a test turns it on).
  const stats = window.hwmStats = { frames: 0, events: 0, covered: 0, record: false, arrivals: [], drawMs: [],
                                    lastFrameAt: 0, flights: 0 };
  window.hwmState = S;
  let scheduled = false;  // a drawing is asked for the next animation frame

  const stage = window.HWMStage(S, {
    nodeAction: (id, action) => nodeAction(id, action),
    select: (id) => { S.selected = id; S.dirty = true; schedule(); },
    drop: (flight) => dropMessage(flight),
    // what else decides the lanes' height: the caption, the timeline, the feed (body classes are seen already)
    sizing: () => [$("#caption").textContent, $("#timeline").hidden, $("#question").offsetHeight,
                   $("#banners").childElementCount].join("|"),
  });
  const question = window.HWMQuestion(S, {
    answer: (id, choice) => answerQuestion(id, choice),
    control: (action, args) => control(action, args),
  });
  const explorer = window.HWMExplore(S, {
    emit: (event, message, done) => socket.emit(event, message, done),
    toast: (text, bad) => toast(text, bad),
    showTab: (name) => showTab(name),
  });

  // ---- socket ------------------------------------------------------------------------------------------
  // Where frames come from: the dashboard's server over Socket.IO (and its drawings over HTTP), or the page's
  // own file when it carries a whole replay (onefile.js, `hwm-lab replay DIR --html FILE`).
  const fetched = (url) => fetch(url).then((r) => (r.ok ? r.text() : Promise.reject(new Error(String(r.status)))));
  const source = window.HWM_SOURCE || { connect: (options) => io(options), sequence: fetched, history: fetched };
  const seat = window.hwmSeat();  // this page's own random name: it answers the room's questions once
  const socket = source.connect({ auth: { ...(token ? { token } : {}), lang: T.lang, ...(seat ? { seat } : {}) },
                                  query: token ? { token } : {} });
  socket.on("connect", () => setConn(true));
  socket.on("disconnect", () => setConn(false));
  socket.on("connect_error", () => setConn(false));
  socket.on("hello", onHello);
  socket.on("frame", onFrame);
  socket.on("guide", (g) => { S.guide = g; renderGuide(); S.dirty = true; schedule(); });
  socket.on("room_lang", (r) => followRoomLanguage(r && r.lang));
  socket.on("question", (q) => {
    S.question = q;
    if (!q || (S.myAnswer && S.myAnswer.id !== q.id)) S.myAnswer = null;
    renderGuide(); S.dirty = true; schedule();
  });
  socket.on("question_count", (c) => {
    if (S.question && c && c.id === S.question.id && S.question.count !== c.count) {
      S.question = { ...S.question, count: c.count }; S.dirty = true; schedule();
    }
  });
  function answerQuestion(id, choice) {
    socket.emit("answer", { id, choice }, (a) => {
      if (a && a.ok) { S.myAnswer = { id: a.id, choice: a.choice }; S.dirty = true; schedule(); }
      else toast((a && a.error) || T.refusedControl, true);
    });
  }

  function setConn(ok) {
    const c = $("#conn");
    c.textContent = ok ? (S.mode === "replay" ? T.replay : T.live) : T.disconnected;
    c.className = "pill " + (ok ? "ok" : "bad");
  }

  function onHello(h) {
    S.mode = h.mode; S.canControl = h.can_control; S.tokenRequired = h.token_required; S.follow = !!h.follow;
    S.ownsCluster = h.owns_cluster; S.scenarios = h.scenarios || []; S.liveAvailable = h.live_available;
    S.frameHz = h.frame_hz || 10;
    S.roomLang = h.room_lang;
    if (followRoomLanguage(h.room_lang)) return;
    if (h.guide) S.guide = h.guide;
    S.question = h.question || null;
    S.myAnswer = h.question && h.answered !== null && h.answered !== undefined ? { id: h.question.id, choice: h.answered } : null;
    S.replay = h.replay; S.seq = null; S.clocks = {};
    if (h.mode !== "replay") stopPlaying();
    stage.clearFlights();
    document.body.dataset.mode = h.mode;
    document.body.classList.toggle("watcher", !S.canControl);
    $("#viewer").hidden = S.canControl;
    $("#timeline").hidden = h.mode !== "replay";
    renderFollow();
    setConn(true);
    if (h.replay) {
      const r = h.replay;
      S.total = r.events; S.duration = r.duration;
      $("#replay-info").textContent = T.replayInfo(r.run_dir, r.meta.run || "", r.meta.source || "?", r.events,
                                                   r.duration, r.warnings.length);
      $("#replay-dir").value = r.run_dir;
      renderMarkers();
    }
    const sel = $("#guide-scenario");
    sel.replaceChildren();
    for (const s of S.scenarios) {
      const o = el("option", "", `${s.name.toUpperCase()}: ${s.title.replace(/^\S+\s+-\s+/, "")}`);
      o.value = s.name; sel.appendChild(o);
    }
    $("#start-note").textContent = S.ownsCluster ? "" : T.attached;
    renderGuide(); applyRights();
    explorer.hello(h);
    S.dirty = true; schedule();
  }

  function onFrame(f) {
    stats.frames += 1;
    const now = performance.now();
    stats.lastFrameAt = performance.timeOrigin + now;
    if (f.kind === "delta" && S.seq !== null && f.base !== S.seq) {
      socket.emit("resync", null, (snap) => { if (snap) onFrame(snap); });
      return;
    }
    const replaying = f.position !== undefined;
    const forward = replaying && f.position > S.position && f.position - S.position <= 60;
    const fresh = f.kind === "delta" ? f.events : (forward ? f.events.filter((e) => e.n > S.position) : []);
    for (const e of fresh) if (e.type === window.HWM_KINDS.TRUNCATED) stage.startTruncation(e);  // before its state lands
    if (f.kind === "snapshot") S.nodes = {};
    for (const n of f.nodes) S.nodes[n.id] = n;
    for (const id of f.gone || []) delete S.nodes[id];
    S.cluster = f.cluster; S.seq = f.seq; S.rate = f.rate; S.eventsNext = f.events_next;
    if (f.clocks) {
      // A clock that ran on since the last poll (no heartbeat reset it) may be drawn running on between polls.
      const clocks = {};
      for (const [id, c] of Object.entries(f.clocks)) {
        const before = S.clocks[id];
        clocks[id] = { ...c, at: now, running: !!before && c.elapsed > before.elapsed };
      }
      S.clocks = clocks;
    }
    if (f.kind === "snapshot") {
      S.feed = f.events.slice().reverse(); S.skipped = f.skipped || 0; S.skippedByType = { ...(f.skipped_by_type || {}) };
      S.feedFull = true;
    } else {
      if (f.events.length) S.feed = f.events.slice().reverse().concat(S.feed);
      S.skipped += f.skipped || 0;
      for (const [k, v] of Object.entries(f.skipped_by_type || {})) S.skippedByType[k] = (S.skippedByType[k] || 0) + v;
      if (S.feed.length > 400) S.feed.length = 400;
    }
    if (replaying) {
      S.position = f.position; S.total = f.total; S.time = f.time; S.play = f.play || 0; S.duration = f.duration;
      S.stepNow = f.step_now || null;
      if (S.playUntil !== null && S.position >= S.playUntil) stepPlayed();
    }
    // Messages in flight: live ones are timed by the run's clock (how long ago each left); replayed ones by
    // the replay's pace.
    const speed = Number(f.speed || $("#play-speed").value) || 1;
    for (const e of fresh) {
      if (replaying) {
        const step = S.replay && S.replay.step_seconds;
        const delay = Number(S.cluster.settings.delay_ms) >= 100 ? Number(S.cluster.settings.delay_ms) : 600;
        stage.addFlights(e, 0, Math.max(150, Math.min(4000, (step ? step * 950 : delay) / speed)));
      } else {
        const age = f.run_clock != null && e.time != null ? Math.max(0, (f.run_clock - e.time) * 1000) : 0;
        stage.addFlights(e, age, Number(S.cluster.settings.delay_ms) || 0);
      }
    }
    stats.events += f.events.length;
    stats.covered += f.events.length + (f.skipped || 0);
    // per frame: when it arrived, when the server sent it, the first event number after it, events in full, summarised
    if (stats.record && f.kind === "delta") stats.arrivals.push([performance.timeOrigin + now, f.sent * 1000, f.events_next, f.events.length, f.skipped || 0]);
    S.dirty = true;
    schedule();
  }

  // ---- controls ----------------------------------------------------------------------------------------
  function control(action, args) {
    return new Promise((resolve) => {
      socket.emit("control", { action, args: args || {} }, (answer) => {
        if (!answer.ok && !answer.confirm && !["write", "read"].includes(action)) toast(answer.error || T.refusedControl, true);
        if (answer.guide) { S.guide = answer.guide; renderGuide(); S.dirty = true; schedule(); }
        if (answer.play_to !== undefined) playStep(answer.play_to);
        resolve(answer);
      });
    });
  }
  window.hwmControl = control;

  function toast(text, bad) {
    let t = $("#toast");
    if (!t) { t = el("div", ""); t.id = "toast"; t.setAttribute("role", "alert"); document.body.appendChild(t); }
    t.textContent = text;
    t.className = bad ? "bad" : "";
    clearTimeout(toast.timer);
    toast.timer = setTimeout(() => t.remove(), 4500);
  }

  function showAnswer(text, refused) {
    const box = $("#answers");
    box.prepend(el("div", "answer" + (refused ? " refused" : ""), text));
    while (box.children.length > 5) box.lastChild.remove();
  }

  function applyRights() {
    for (const b of document.querySelectorAll("#panel button, #panel select, #panel input, .badge button")) {
      if (b.closest("#tab-replay") && b.id !== "btn-open" && b.id !== "replay-dir") continue;
      if (b.closest("#tab-explore") || b.id === "btn-explore-here") continue;  // explore.js sets them
      if (b.closest(".tabs")) continue;
      b.disabled = !S.canControl || (S.mode === "replay" && !b.closest("#tab-replay"));
    }
    const noGuide = !S.ownsCluster;
    $("#btn-guide-start").disabled = !S.canControl || noGuide || S.mode === "replay";
    $("#btn-start").disabled = !S.canControl || noGuide || S.mode === "replay";
    $("#btn-live").disabled = !S.liveAvailable;
    $("#answers-csv").hidden = !S.canControl;
    $("#answers-csv").href = "api/dashboard/answers.csv" + (token ? "?token=" + encodeURIComponent(token) : "");
    $("#lang").title = S.canControl ? T.langRoomTitle : T.langTitle;
    renderGuideButtons();
  }

  $("#write-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const payload = $("#write-payload").value.trim();
    if (!payload) return;
    const node = $("#write-node").value;
    $("#btn-write").disabled = true;
    $("#write-payload").value = nextPayload(payload);
    const a = await control("write", node ? { payload, node } : { payload });
    $("#btn-write").disabled = !S.canControl;
    if (a.ok) showAnswer(T.wrote(payload, a.index, a.generation, a.node));
    else showAnswer(T.notAcked(payload, a.error), true);
  });
  function nextPayload(p) { const m = /^(.*?)(\d+)$/.exec(p); return m ? m[1] + (Number(m[2]) + 1) : p; }

  $("#read-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const index = Number($("#read-index").value), node = $("#read-node").value;
    const linearizable = $("#read-linearizable").checked;
    const a = await control("read", linearizable ? { index, node, linearizable } : { index, node });
    const by = a.node || node;  // a linearizable read is answered by the leader the node named
    if (a.ok && linearizable) showAnswer(T.servedByLeader(by, index, a.payload, a.generation, a.high_water_mark));
    else if (a.ok) showAnswer(T.served(node, index, a.payload, a.generation, a.high_water_mark));
    else showAnswer(T.refused(by, index, a.error), true);
  });

  $("#settings-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    delete $("#settings-form").dataset.editing;
    delete $("#settings-form").dataset.shown;
    const st = S.cluster.settings || {}, want = {};
    if ($("#set-fsync").value !== st.fsync) want.fsync = $("#set-fsync").value;
    if ($("#set-truncation").value !== st.truncation) want.truncation = $("#set-truncation").value;
    if (Number($("#set-delay").value) !== Math.round(st.delay_ms || 0)) want.delay_ms = Number($("#set-delay").value);
    if (!Object.keys(want).length) { toast(T.noChange); return; }
    control("settings", want).then((a) => { if (a.ok) toast(T.applied); });
  });
  $("#start-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const nodes = Number($("#start-nodes").value);
    $("#btn-start").disabled = true;
    control("start_cluster", { nodes }).then((a) => { $("#btn-start").disabled = !S.canControl; if (a.ok) toast(T.started(nodes)); });
  });
  $("#btn-heal-all").addEventListener("click", () => control("heal_all"));
  $("#btn-clocks").addEventListener("click", toggleClocks);
  // A scenario starts its own cluster: the instructor is asked first, in the page (a presenter's remote answers
  // it with a button), when that loses what the room built.
  let guideAsked = null;
  $("#guide-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const args = { scenario: $("#guide-scenario").value, truncation: $("#guide-truncation").value || null };
    const a = await control("guide_start", args);
    if (a.confirm) {
      guideAsked = args;
      $("#guide-confirm-text").textContent = a.confirm;
      $("#guide-confirm").hidden = false;
      $("#btn-guide-replace").focus();
    }
  });
  function answerGuideConfirm(yes) {
    $("#guide-confirm").hidden = true;
    if (yes && guideAsked) control("guide_start", { ...guideAsked, replace: true });
    guideAsked = null;
  }
  $("#btn-guide-replace").addEventListener("click", () => answerGuideConfirm(true));
  $("#btn-guide-cancel").addEventListener("click", () => answerGuideConfirm(false));
  $("#btn-read-ask").addEventListener("click", () => {
    control("question_ask", { index: Number($("#read-index").value), node: $("#read-node").value });
  });
  $("#btn-next").addEventListener("click", () => control("guide_next"));
  $("#btn-back").addEventListener("click", () => control("guide_back"));
  $("#replay-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    socket.emit("replay_open", { dir: $("#replay-dir").value.trim() }, (a) => { if (!a.ok) toast(a.error, true); });
  });
  $("#btn-live").addEventListener("click", () => {
    stopPlaying();
    leaveFollow();
    socket.emit("go_live", null, (a) => { if (!a.ok) toast(a.error, true); });
  });

  function nodeAction(id, action) { return control(action, { node: id }); }
  function isolate(id) {
    for (const o of S.cluster.ids) if (o !== id) control("cut", { src: id, dst: o, one_way: false });
  }
  function clocksHeld() { return !!(S.cluster.settings && S.cluster.settings.hold_ticks); }
  function toggleClocks() {
    const hold = !clocksHeld();
    control("clocks", { hold }).then((a) => { if (a.ok) toast(hold ? T.clocksHeld : T.clocksReleased); });
  }
  function dropMessage(flight) {
    if (S.mode !== "live" || !S.canControl) { toast(T.viewerOnly, true); return; }
    const left = flight.t0 + flight.dur - performance.now();
    if (left <= 30) return;
    stage.dropFlight(flight);
    control("cut_in_flight", { src: flight.src, dst: flight.dst, ms: Math.round(left) }).then((a) => {
      if (a.ok) toast(T.dropped(flight.src, flight.dst, flight.label));
    });
  }

  // ---- languages: a page reads the language it chose (?lang=), else the room's ---------------------------
  // Another language is another page load: the server renders the page and its catalogue in it.
  function reloadIn(lang) {
    const url = new URL(location.href);
    if (lang) url.searchParams.set("lang", lang); else url.searchParams.delete("lang");
    location.replace(url.toString());
  }
  function followRoomLanguage(lang) {
    S.roomLang = lang || S.roomLang;
    if (!lang || I18N.chosen || lang === T.lang) return false;
    reloadIn(null);
    return true;
  }
  $("#lang").addEventListener("change", () => {
    const lang = $("#lang").value;
    if (S.canControl) {  // the instructor's language is the room's: every page that did not choose follows
      I18N.chosen = null;
      control("room_lang", { lang }).then((a) => { if (a.ok && lang !== T.lang) reloadIn(null); });
    } else {
      reloadIn(lang === S.roomLang ? null : lang);  // the room's language again: follow the room again
    }
  });

  // ---- following the instructor ------------------------------------------------------------------------
  function renderFollow() {
    const b = $("#btn-follow");
    b.hidden = S.canControl;  // whoever holds the token leads
    b.setAttribute("aria-pressed", String(S.follow));
    b.textContent = S.follow ? T.following : T.notFollowing;
  }
  function setFollow(on) {
    socket.emit("follow", { on }, (a) => { if (a && a.ok) { S.follow = a.follow; renderFollow(); } });
  }
  function leaveFollow() {
    if (!S.follow) return;
    S.follow = false; renderFollow(); setFollow(false); toast(T.followLeft);
  }
  $("#btn-follow").addEventListener("click", () => setFollow(!S.follow));

  // ---- tabs, help, large type, panels ------------------------------------------------------------------
  function showTab(name) {
    if (document.body.classList.contains("no-panel")) setPanel(true);
    for (const b of document.querySelectorAll(".tabs button")) b.setAttribute("aria-selected", String(b.dataset.tab === name));
    for (const t of document.querySelectorAll(".tab")) t.hidden = t.id !== "tab-" + name;
  }
  for (const b of document.querySelectorAll(".tabs button")) b.addEventListener("click", () => showTab(b.dataset.tab));
  const help = $("#help");
  $("#btn-help").addEventListener("click", () => { help.hidden = false; $("#btn-help-close").focus(); });
  $("#btn-help-close").addEventListener("click", () => { help.hidden = true; });
  function remember(key, on) { try { localStorage.setItem(key, on ? "1" : ""); } catch (e) { /* private mode */ } }
  function remembered(key) { try { return localStorage.getItem(key); } catch (e) { return null; } }
  function setLarge(on) {
    document.body.classList.toggle("large", on);
    $("#btn-large").setAttribute("aria-pressed", String(on));
    remember("hwm-large", on);
    S.dirty = true; schedule();
  }
  function setPanel(on) {
    document.body.classList.toggle("no-panel", !on);
    $("#btn-panel").setAttribute("aria-pressed", String(on));
    remember("hwm-no-panel", !on);
    S.dirty = true; schedule();
  }
  function setFeed(open) {
    $("#feed-wrap").classList.toggle("collapsed", !open);
    document.body.classList.toggle("feed-collapsed", !open);
    $("#btn-feed").setAttribute("aria-expanded", String(open));
    $("#btn-feed").textContent = open ? T.feedOpen : T.feedClosed;
    remember("hwm-feed-closed", !open);
    S.dirty = true; S.feedFull = true; schedule();
  }
  $("#btn-large").addEventListener("click", () => setLarge(!document.body.classList.contains("large")));
  $("#btn-panel").addEventListener("click", () => setPanel(document.body.classList.contains("no-panel")));
  $("#btn-feed").addEventListener("click", () => setFeed($("#feed-wrap").classList.contains("collapsed")));
  $("#show-heartbeats").addEventListener("change", (ev) => { S.showHeartbeats = ev.target.checked; });
  if (remembered("hwm-large") || params.get("large")) setLarge(true);
  if (remembered("hwm-no-panel") || params.get("panel") === "0") setPanel(false);
  if (remembered("hwm-feed-closed") || params.get("feed") === "0") setFeed(false);
  window.addEventListener("resize", () => { S.dirty = true; schedule(); });

  document.addEventListener("keydown", (ev) => {
    if (ev.key === "Escape") { help.hidden = true; if (document.activeElement) document.activeElement.blur(); return; }
    const tag = (ev.target.tagName || "").toLowerCase();
    if (["input", "select", "textarea"].includes(tag) || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const k = ev.key.length === 1 ? ev.key.toLowerCase() : ev.key;
    const ids = S.cluster.ids || [];
    const sel = S.selected;
    const needsNode = new Set(["k", "r", "p", "x"]);  // they act on the selected node
    let handled = true;
    if (k === "?") help.hidden = !help.hidden;
    else if (/^[1-7]$/.test(k) && ids[Number(k) - 1]) { S.selected = ids[Number(k) - 1]; S.dirty = true; schedule(); }
    else if (needsNode.has(k) && !sel) toast(T.needNode(k.toUpperCase()), true);
    else if (k === "k") nodeAction(sel, "kill");
    else if (k === "r") nodeAction(sel, "restart");
    else if (k === "p") nodeAction(sel, (S.nodes[sel] || {}).state === "paused" ? "resume" : "pause");
    else if (k === "x") isolate(sel);
    else if (k === "h") control("heal_all");
    else if (k === "t") toggleClocks();
    else if (k === "w") { showTab("client"); $("#write-payload").focus(); }
    else if (k === "e") { showTab("client"); $("#read-index").focus(); }
    else if (k === "s") control("settings", { delay_ms: (S.cluster.settings.delay_ms || 0) ? 0 : 1000 });
    else if (k === "n") { if (!$("#btn-next").disabled) control("guide_next"); }
    else if (k === "b") { if (!$("#btn-back").disabled) control("guide_back"); }
    else if (k === "l") setLarge(!document.body.classList.contains("large"));
    else if (k === "q") setSequence(!seq.on);
    else if (k === "i") setHistory(!hist.on);
    else if (k === "c") setPanel(document.body.classList.contains("no-panel"));
    else if (k === "f") setFeed($("#feed-wrap").classList.contains("collapsed"));
    else if (k === " " && S.mode === "replay") togglePlay();
    else if ((k === "ArrowRight" || k === "ArrowLeft") && S.mode === "replay") {
      stopPlaying(); leaveFollow();
      seek({ position: S.position + (k === "ArrowRight" ? 1 : -1) * (ev.shiftKey ? 20 : 1) });
    } else if ((k === "[" || k === "]") && S.mode === "replay") jumpStep(k === "]" ? 1 : -1);
    else handled = false;
    if (handled) ev.preventDefault();
  });

  // ---- replay timeline ---------------------------------------------------------------------------------
  // One seek in flight at a time, the newest wish waiting; a pause or a drag of the slider makes the answers
  // to earlier wishes stale, so that the picture stops where the user stopped it.
  let seekBusy = false, seekPending = null, seekGen = 0;
  function seek(target) {
    if (seekBusy) { seekPending = target; return; }
    seekBusy = true;
    const gen = seekGen;
    socket.emit("replay_seek", target, (frame) => {
      seekBusy = false;
      if (frame && frame.kind && gen === seekGen) onFrame(frame);
      if (seekPending) { const t = seekPending; seekPending = null; seek(t); }
    });
  }
  function stopPlaying() { S.playing = false; seekGen += 1; seekPending = null; updatePlayButton(); }
  window.hwmSeek = seek;  // for the browser tests: {position: n} or {time: s}
  $("#scrub").addEventListener("input", () => {
    stopPlaying(); leaveFollow();
    const t = Number($("#scrub").value);  // the slider's steps are 0.01 s: its end is the replay's end
    seek(t >= Number($("#scrub").max) - 0.005 ? { position: S.total } : { time: t });
  });
  $("#btn-play").addEventListener("click", togglePlay);
  $("#btn-step-back").addEventListener("click", () => jumpStep(-1));
  $("#btn-step-next").addEventListener("click", () => jumpStep(1));
  function togglePlay() {
    if (S.mode !== "replay") return;
    leaveFollow();
    if (S.playing) { stopPlaying(); return; }
    S.playing = true;
    S.playTime = S.position >= S.total ? 0 : S.play;
    if (S.position >= S.total) seek({ position: 0 });
    updatePlayButton();
    lastPlayTick = performance.now();
    requestAnimationFrame(playTick);
  }
  function updatePlayButton() { $("#btn-play").textContent = S.playing ? T.pause : T.play; }
  let lastPlayTick = 0;
  function playTick(now) {
    if (!S.playing) return;
    const dt = (now - lastPlayTick) / 1000;
    if (dt >= 0.1) {  // ten seeks a second at most: the server answers with a frame each
      lastPlayTick = now;
      const speed = Number($("#play-speed").value);
      S.playTime += dt * speed;
      const end = S.playTime >= S.duration;
      if (end) S.playTime = S.duration;
      seek({ time: S.playTime, playing: true, speed });
      if (end) { S.playing = false; updatePlayButton(); }  // the last seek above still lands
    }
    requestAnimationFrame(playTick);
  }
  function steps() { return (S.replay && S.replay.steps) || []; }
  function jumpStep(direction) {
    const list = steps();
    if (!list.length) return;
    stopPlaying(); leaveFollow();
    const target = direction > 0 ? list.find((s) => s.n > S.position) : [...list].reverse().find((s) => s.n < S.position);
    if (target) seek({ position: target.n });
    else if (direction < 0) seek({ position: 0 });
  }
  function renderMarkers() {
    const box = $("#markers");
    box.replaceChildren();
    const list = steps();
    const broken = S.replay && S.replay.broken;
    list.forEach((s, k) => {
      const m = el("button", "marker" + (broken && broken.step === k + 1 ? " broken" : "")); m.type = "button";
      m.style.left = (100 * s.play / Math.max(S.duration, 0.001)) + "%";
      m.title = T.stepMarker(k + 1, s.text);
      m.appendChild(el("span", "", String(k + 1)));
      m.addEventListener("click", () => { stopPlaying(); leaveFollow(); seek({ position: s.n }); });
      box.appendChild(m);
    });
  }

  // ---- the message-sequence view: drawn by the server (lab/i18n/sequence.py), the same picture it exports ------
  // A replay's view is of the events up to its cursor, and is fetched again whenever the cursor moves; a live
  // cluster's is of the whole run (or its last seconds), fetched at most once a second. It is drawn as wide as
  // the stage, and the nodes' names stay at the top of the view however far it scrolls.
  const seq = { on: false, pending: false, again: false, shownKey: null, at: 0 };
  const SEQ_ZOOM = 1.3;  // large type draws the diagram bigger (dashboard.css)
  function sequenceWidth() {
    const zoom = document.body.classList.contains("large") ? SEQ_ZOOM : 1;
    return Math.floor(($("#sequence").clientWidth - 2) / zoom);
  }
  function sequenceUrl(download) {
    const q = new URLSearchParams({ lang: T.lang, width: String(sequenceWidth()) });
    if (S.mode === "replay") { q.set("mode", "replay"); q.set("position", String(S.position)); }
    else if ($("#seq-span").value === "whole") q.set("whole", "1");
    else q.set("seconds", "15");
    if ($("#seq-heartbeats").checked) q.set("heartbeats", "1");
    if (download) q.set("download", "1");
    return "sequence.svg?" + q.toString();
  }
  function renderSequence(now) {
    const key = [S.mode, S.mode === "replay" ? S.position : "", $("#seq-heartbeats").checked, $("#seq-span").value,
                 sequenceWidth()].join("|");
    if (S.mode === "replay" ? key === seq.shownKey : key === seq.shownKey && now - seq.at < 1000) return;
    if (seq.pending) { seq.again = true; return; }
    seq.pending = true; seq.at = now; seq.shownKey = key;
    const position = S.position;
    $("#seq-span").hidden = S.mode === "replay";
    $("#seq-caption").textContent = S.mode === "replay" ? T.seqReplay(position, S.total)
      : $("#seq-span").value === "whole" ? T.seqWhole : T.seqLive(15);
    $("#seq-export").href = sequenceUrl(true);
    source.sequence(sequenceUrl(false)).then((text) => {
      const box = $("#sequence");
      box.innerHTML = text;  // this server's own SVG: every label in it is escaped (lab/i18n/sequence.py)
      const names = el("div", "seq-names");  // the lines' names, kept in view at the top as the diagram scrolls
      for (const g of box.querySelectorAll("svg g.node")) {
        const n = el("span", "", g.dataset.node); n.style.left = g.dataset.x + "px"; names.appendChild(n);
      }
      box.prepend(names);
      box.dataset.position = S.mode === "replay" ? String(position) : "";
      box.scrollTop = box.scrollHeight;  // the newest rows (the cursor's) in view
    }).catch(() => { seq.shownKey = null; }).finally(() => {
      seq.pending = false;
      if (seq.again) { seq.again = false; S.dirty = true; schedule(); }
    });
  }
  function setSequence(on) {
    if (on && hist.on) setHistory(false);
    seq.on = on; seq.shownKey = null;
    document.body.classList.toggle("sequence-view", on);
    $("#sequence-wrap").hidden = !on;
    $("#btn-sequence").setAttribute("aria-pressed", String(on));
    if (!on) stage.clearFlights();
    S.dirty = true; schedule();
  }
  $("#btn-sequence").addEventListener("click", () => setSequence(!seq.on));
  $("#seq-heartbeats").addEventListener("change", () => { S.dirty = true; schedule(); });
  $("#seq-span").addEventListener("change", () => { S.dirty = true; schedule(); });
  window.hwmSequence = setSequence;

  // ---- the clients' history: each operation an interval on a time axis, stale reads marked (lab/i18n/intervals.py,
  // the server's drawing of the whole run); a live cluster's is drawn again at most every two seconds.
  const hist = { on: false, pending: false, shownKey: null, at: 0 };
  function renderHistory(now) {
    const key = [S.mode, S.mode === "replay" ? S.total : ""].join("|");
    if (key === hist.shownKey && (S.mode === "replay" || now - hist.at < 2000)) return;
    if (hist.pending) return;
    hist.pending = true; hist.at = now; hist.shownKey = key;
    $("#history-caption").textContent = S.mode === "replay" ? T.historyReplay : T.seqWhole;
    const q = new URLSearchParams({ lang: T.lang });
    if (S.mode === "replay") q.set("mode", "replay");
    source.history("history.svg?" + q.toString())
      .then((text) => { $("#history").innerHTML = text; })  // the server's own SVG: its labels are escaped
      .catch(() => { hist.shownKey = null; }).finally(() => { hist.pending = false; });
  }
  function setHistory(on) {
    if (on && seq.on) setSequence(false);
    hist.on = on; hist.shownKey = null;
    document.body.classList.toggle("history-view", on);
    $("#history-wrap").hidden = !on;
    $("#btn-history").setAttribute("aria-pressed", String(on));
    S.dirty = true; schedule();
  }
  $("#btn-history").addEventListener("click", () => setHistory(!hist.on));
  window.hwmHistory = setHistory;

  // ---- drawing -----------------------------------------------------------------------------------------
  function schedule() { if (!scheduled) { scheduled = true; requestAnimationFrame(draw); } }

  function draw() {
    scheduled = false;
    const started = performance.now();
    if (S.dirty) { S.dirty = false; renderAll(started); }
    const moving = stage.animate(started);
    if (stats.record) {  // the frame's style and layout are counted too: read a size to have them done now
      void document.body.offsetHeight;
      stats.drawMs.push(performance.now() - started);
      stats.flights = Math.max(stats.flights, stage.flightsShown());
    }
    if (moving) schedule();
  }

  function renderAll(now) {
    renderHeader(); renderLegend(); renderBanners(); renderCaption(); question.render();
    if (hist.on) renderHistory(now); else if (seq.on) renderSequence(now); else stage.render(now);
    renderFeed(S.feedFull); S.feedFull = false;
    renderNodeButtons(); renderLinks(); renderSelects(); renderTimeline();
    const rights = [S.canControl, S.mode, S.ownsCluster, S.liveAvailable, (S.cluster.ids || []).join()].join();
    if (rights !== S.rightsShown) { S.rightsShown = rights; applyRights(); }  // new buttons appear with new nodes
  }

  function renderHeader() {
    const c = S.cluster, leader = c.leader ? S.nodes[c.leader] : null;
    const hwm = leader ? leader.hwm : "–";
    const full = c.error ? T.apiError(c.error) :
      T.summary((c.ids || []).length, leader && leader.id, leader && leader.generation, hwm,
                c.settings.truncation || "?", fmtFsync(c.settings.fsync));
    // The whole summary when it fits the header; else its heart (leader, generation, mark), the rest in its title.
    const sum = $("#summary"), key = [full, innerWidth, document.body.className].join("|");
    if (sum.dataset.key !== key) {
      sum.dataset.key = key; sum.textContent = full; sum.title = full;
      // shorter forms keep the truncation strategy (a guided scenario may run with another than the room's)
      if (!c.error && sum.scrollWidth > sum.clientWidth + 1) sum.textContent = T.summaryMid(leader && leader.id, leader && leader.generation, hwm, c.settings.truncation || "?");
      if (!c.error && sum.scrollWidth > sum.clientWidth + 1) sum.textContent = T.summaryShort(leader && leader.id, leader && leader.generation, hwm, c.settings.truncation || "?");
    }
    $("#rate").textContent = S.mode === "live" ? T.rate(Math.round(S.rate)) : "";
    // When entries stream in, the window moves every frame: sliding every cell would keep the page busy
    // animating instead of drawing the next frame on time.
    document.body.classList.toggle("busy", S.mode === "live" && S.rate > 400);
  }
  function fmtFsync(f) { if (!f) return "?"; if (typeof f === "string") return f; const v = new Set(Object.values(f)); return v.size === 1 ? [...v][0] : Object.entries(f).map(([k, x]) => k + " " + x).join(", "); }

  function renderLegend() {
    const gens = new Set();
    for (const n of Object.values(S.nodes)) { for (const c of n.log) if (c[1] !== null) gens.add(c[1]); if (n.generation) gens.add(n.generation); }
    const list = [...gens].sort((a, b) => a - b);
    const key = list.join();
    const L = $("#legend");
    if (L.dataset.gens === key) return;
    L.dataset.gens = key;
    L.replaceChildren(el("span", "", T.legendGeneration));
    for (const g of list) {
      const s = el("span", ""); s.appendChild(el("span", "sw " + stage.gclass(g)));
      s.appendChild(document.createTextNode(String(g))); L.appendChild(s);
    }
    const u = el("span", ""); u.appendChild(el("span", "sw uncommitted")); u.appendChild(document.createTextNode(T.legendAbove)); L.appendChild(u);
    const r = el("span", ""); r.appendChild(el("span", "sw ring")); r.appendChild(document.createTextNode(T.legendTimer)); L.appendChild(r);
    L.appendChild(el("span", "", T.legendMarks));
  }

  function renderBanners() {
    const box = $("#banners"), want = [];
    const delay = Math.round(Number(S.cluster.settings.delay_ms) || 0);
    if (S.mode === "live" && delay > 0) want.push(["slow", T.slowBanner(delay)]);
    if (S.mode === "live" && clocksHeld()) want.push(["held", T.heldBanner]);
    const key = JSON.stringify(want);
    if (box.dataset.key === key) return;
    box.dataset.key = key;
    box.replaceChildren(...want.map(([cls, text]) => el("span", "banner " + cls, text)));
    const b = $("#btn-clocks");
    b.setAttribute("aria-pressed", String(clocksHeld()));
    b.classList.add("toggle");
  }

  function renderCaption() {
    const cap = $("#caption");
    let text = "";
    const g = S.guide;
    if (S.mode === "live" && g && g.active) {
      if (g.busy && g.action === "start") text = T.guideStarting(g.name);
      else if (g.done) text = T.guideCaption(g.name, g.done, g.total, g.text);
      else text = T.guideAbout(g.name, g.description || g.title);
    } else if (S.mode === "replay") {
      const list = steps();
      let k = -1;
      list.forEach((s, i) => { if (s.start <= S.position) k = i; });  // a step is under way from its start
      // a step the room is asked about keeps its narration until it plays: the frame brings it then
      const said = list[k] && (list[k].text || (S.stepNow && S.stepNow.k === k + 1 ? S.stepNow.text : ""));
      if (k >= 0) text = said ? T.replayCaption(k + 1, list.length, said) : T.replayStep(k + 1, list.length);
    }
    cap.hidden = !text;
    if (cap.textContent !== text) cap.textContent = text;
  }

  const KINDS = window.HWM_KINDS;  // the event kinds, from their declarations (web/narrate.py FEED_KINDS)
  const IMPORTANT = new Set(KINDS.important);
  const ROUTINE = new Set(KINDS.routine);
  // The feed is the costliest thing to draw: new lines are added at the top, old ones dropped at the bottom,
  // and the whole list is rebuilt only for a snapshot or a change of filter.
  const FEED_LINES = 80;
  let feedShown = null;  // the newest event drawn (object identity)
  function feedLine(e) {
    const li = el("li", (IMPORTANT.has(e.type) || e.stale ? "important " : "") + e.type
                  + (e.type === KINDS.EXPECTATION && !e.ok ? " expect-fail" : "") + (e.stale ? " stale" : ""));
    li.appendChild(el("span", "t", e.time !== undefined ? T.feedTime(e.time) : ""));
    li.appendChild(el("span", "who", e.node === "cluster" ? "⚙" : e.node));
    li.appendChild(el("span", "x", e.text || e.type));
    return li;
  }
  function renderFeed(full) {
    const hide = $("#hide-routine").checked;
    // Hundreds of entries a second are a blur, and each line costs the page a layout: keep only the story.
    const storyOnly = hide && document.body.classList.contains("busy");
    const list = $("#feed");
    const fresh = [];
    for (const e of S.feed) {
      if (!full && e === feedShown) break;
      if (hide && ROUTINE.has(e.type)) continue;
      if (storyOnly && !IMPORTANT.has(e.type)) continue;
      fresh.push(e);
      if (fresh.length >= FEED_LINES) break;
    }
    if (full || fresh.length >= FEED_LINES || feedShown === null) {
      const frag = document.createDocumentFragment();
      for (const e of fresh) frag.appendChild(feedLine(e));
      list.replaceChildren(frag);
    } else if (fresh.length) {
      const frag = document.createDocumentFragment();
      for (const e of fresh) frag.appendChild(feedLine(e));
      list.prepend(frag);
      while (list.children.length > FEED_LINES) list.lastChild.remove();
    }
    feedShown = S.feed.length ? S.feed[0] : null;
    const latest = S.feed.find((e) => IMPORTANT.has(e.type) || e.stale);
    $("#feed-latest").textContent = latest ? latest.text : "";
    const top = T.feedTop(S.skippedByType);
    // The count always; which kinds, when they fit the line (and in the tooltip).
    const skipped = $("#skipped"), said = S.skipped ? (top ? T.feedSkipped(S.skipped, top) : T.feedSkippedShort(S.skipped)) : "";
    if (skipped.title !== said || skipped.dataset.w !== String(innerWidth) + document.body.className) {
      skipped.title = said; skipped.dataset.w = String(innerWidth) + document.body.className;
      skipped.textContent = said;
      if (said && skipped.scrollWidth > skipped.clientWidth + 1) skipped.textContent = T.feedSkippedShort(S.skipped);
    }
  }
  $("#hide-routine").addEventListener("change", () => { S.feedFull = true; S.dirty = true; schedule(); });

  function renderNodeButtons() {
    const box = $("#node-buttons");
    const ids = S.cluster.ids || [];
    if (box.dataset.ids !== ids.join()) {
      box.replaceChildren(); box.dataset.ids = ids.join();
      for (const id of ids) {
        const row = el("div", "nb"); row.appendChild(el("b", "", id));
        for (const a of ["kill", "restart", "pause", "resume", "disk-full", "disk-ok", "fsync-fail"]) {
          const b = el("button", a === "kill" ? "danger" : "", T.buttons[a]); b.type = "button"; b.id = `nb-${a}-${id}`;
          if (T.storageTitle(a, id)) b.title = T.storageTitle(a, id);
          b.addEventListener("click", () => nodeAction(id, a)); row.appendChild(b);
        }
        const s = el("span", "state"); s.id = "nb-state-" + id; row.appendChild(s);
        box.appendChild(row);
      }
    }
    for (const id of ids) {
      const n = S.nodes[id]; const s = document.getElementById("nb-state-" + id);
      if (n && s) { s.textContent = T.state(n.state); s.className = "state " + n.state.replace(" ", "-"); }
    }
    // the settings form follows the cluster's settings, unless someone is editing it
    const st = S.cluster.settings || {};
    const key = JSON.stringify([st.fsync, st.truncation, st.delay_ms]);
    const form = $("#settings-form");
    if (key !== form.dataset.shown && !form.dataset.editing) {
      form.dataset.shown = key;
      if (st.fsync && typeof st.fsync === "string") $("#set-fsync").value = st.fsync;
      if (st.truncation) $("#set-truncation").value = st.truncation;
      const d = String(Math.round(st.delay_ms || 0));
      if ([...$("#set-delay").options].some((o) => o.value === d)) $("#set-delay").value = d;
    }
  }
  $("#settings-form").addEventListener("change", () => { $("#settings-form").dataset.editing = "1"; });

  function renderLinks() {
    const ids = S.cluster.ids || [];
    const cut = new Set((S.cluster.links || []).filter((l) => l.cut).map((l) => l.src + ">" + l.dst));
    const table = $("#links");
    if (table.dataset.ids !== ids.join()) {
      table.dataset.ids = ids.join(); table.replaceChildren();
      const head = el("tr"); head.appendChild(el("th", "", "→"));
      for (const d of ids) head.appendChild(el("th", "", d));
      table.appendChild(head);
      for (const s of ids) {
        const tr = el("tr"); tr.appendChild(el("th", "", s));
        for (const d of ids) {
          const td = el("td");
          if (s !== d) {
            const b = el("button", "", "→"); b.type = "button"; b.id = `link-${s}-${d}`;
            b.addEventListener("click", () => {
              const isCut = b.classList.contains("cut");
              control(isCut ? "heal" : "cut", { src: s, dst: d, one_way: !$("#both-ways").checked });
            });
            td.appendChild(b);
          }
          tr.appendChild(td);
        }
        table.appendChild(tr);
      }
    }
    for (const s of ids) for (const d of ids) {
      const b = document.getElementById(`link-${s}-${d}`);
      if (!b) continue;
      const isCut = cut.has(s + ">" + d);
      b.classList.toggle("cut", isCut); b.textContent = isCut ? "✂" : "→";
      b.title = T.linkTitle(s, d, isCut);
    }
  }

  function renderSelects() {
    const ids = S.cluster.ids || [];
    for (const [sel, first, word] of [["#write-node", T.toLeader, T.to], ["#read-node", null, T.from]]) {
      const s = $(sel);
      if (s.dataset.ids === ids.join()) continue;
      const keep = s.value; s.dataset.ids = ids.join(); s.replaceChildren();
      if (first) { const o = el("option", "", first); o.value = ""; s.appendChild(o); }
      for (const id of ids) { const o = el("option", "", word(id)); o.value = id; s.appendChild(o); }
      if ([...s.options].some((o) => o.value === keep)) s.value = keep;
    }
  }

  // A question about a replayed step: closing it plays the step (the followers follow), then asks for the reveal.
  function playStep(end) {
    S.playUntil = end;
    if (S.position >= end) { stepPlayed(); return; }
    if (!S.playing) togglePlay();
  }
  function stepPlayed() {
    const end = S.playUntil;
    S.playUntil = null;
    stopPlaying();
    if (S.position !== end) seek({ position: end });  // a played moment may overshoot the step's last event
    control("question_reveal");
  }
  function renderReplayAsks() {
    const box = $("#replay-asks"), asks = (S.replay && S.replay.asks) || [], list = steps();
    const k = list.findIndex((s) => s.n >= S.position);  // the step the cursor is before (or at the start of)
    const open = S.question && S.question.state !== "revealed";
    const key = [k, open, S.canControl, S.mode, S.replay && S.replay.run_dir].join("|");
    if (box.dataset.key === key) return;
    box.dataset.key = key; box.replaceChildren();
    if (S.mode !== "replay" || k < 0 || open || !S.canControl) return;
    (asks[k] || []).forEach((prompt, n) => {
      const b = el("button", "ask", T.qAskStep(k + 1, prompt)); b.type = "button"; b.id = `btn-replay-ask-${n}`;
      b.addEventListener("click", () => control("question_ask", { replay_step: k + 1, n }));
      box.appendChild(b);
    });
  }

  function renderTimeline() {
    renderReplayAsks();
    if (S.mode !== "replay") return;
    const scrub = $("#scrub");
    scrub.max = String(Math.ceil(S.duration * 100) / 100);
    if (document.activeElement !== scrub) scrub.value = String(S.play);
    $("#scrub-label").textContent = T.scrubLabel(S.position, S.total, S.play, S.duration, S.replay && S.replay.stepped);
  }

  function renderGuide() {
    const g = S.guide, box = $("#guide");
    box.replaceChildren();
    if (!g || !g.active) {
      box.appendChild(el("p", "muted small", g && g.error ? g.error : T.guideIntro));
    } else {
      box.appendChild(el("div", "gtitle", T.guideTitle(g.title, g.truncation)));
      let label = T.guideStep(g.done, g.total);
      if (g.busy) label = g.action === "back" ? T.guideGoingBack(g.target, g.total)
        : g.action === "start" ? T.guideStartingLabel : T.guideRunning(g.target || Math.min(g.done + 1, g.total), g.total);
      const progress = el("div", "small", label);
      progress.id = "guide-progress"; box.appendChild(progress);
      const bar = el("div", "progress"); const fill = el("div", ""); fill.style.width = (100 * g.done / g.total) + "%"; bar.appendChild(fill); box.appendChild(bar);
      box.appendChild(el("div", "steptext", g.done ? g.text : g.description || T.guideFirst));
      for (const o of g.outcomes || []) box.appendChild(el("div", "outcome small " + (o.ok ? "ok" : "fail"), `${o.ok ? "✓" : "✗"} ${o.name}${o.detail ? " — " + o.detail : ""}`));
      if (g.error) box.appendChild(el("div", "outcome fail small", g.error));
      // Only the next step's number: its narration would tell the room the answer before the step plays (the server
      // never sends it).
      if (g.done < g.total) box.appendChild(el("div", "next-preview", T.guideNextStep(g.done + 1, g.total)));
      else box.appendChild(el("div", "next-preview", T.guideDone(g.passed)));
    }
    renderGuideAsks();
    renderGuideButtons();
  }
  // The questions the room may be asked before the next step (computed by the server from the scenario's model).
  function renderGuideAsks() {
    const g = S.guide, box = $("#guide-asks");
    box.replaceChildren();
    const open = S.question && S.question.state !== "revealed";
    if (!g || !g.active || g.busy || open || S.mode !== "live" || !S.canControl) return;
    for (const a of g.asks || []) {
      const b = el("button", "ask", T.qAsk(a.prompt)); b.type = "button"; b.id = "btn-ask-" + a.n;
      b.addEventListener("click", () => control("question_ask", { n: a.n }));
      box.appendChild(b);
    }
  }
  function renderGuideButtons() {
    const g = S.guide, can = S.canControl && g && g.active && !g.busy && S.mode === "live";
    $("#btn-next").disabled = !(can && g.done < g.total);
    $("#btn-back").disabled = !(can && g.done > 0);
  }

  schedule();
})();
