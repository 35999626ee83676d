/* HWM Lab dashboard page: draws the frames the server pushes and sends controls back. Plain JS, no build step.
   Frames: a snapshot (every node) or a delta (changed nodes) plus the events since the last frame; the page
   draws at most once per animation frame whatever the rate at which they arrive. */
(function () {
  "use strict";

  const $ = (sel, root) => (root || document).querySelector(sel);
  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const params = new URLSearchParams(location.search);
  const token = params.get("token");

  // ---- state -------------------------------------------------------------------------------------------
  const S = {
    mode: document.body.dataset.mode || "live",
    canControl: false, tokenRequired: false, ownsCluster: false, liveAvailable: true,
    seq: null, nodes: {}, cluster: { ids: [], links: [], settings: {}, leader: null, connected: false },
    feed: [], skipped: 0, skippedByType: {}, rate: 0, eventsNext: 1,
    selected: null, anims: {}, flights: [], dirty: true, guide: null, scenarios: [],
    replay: null, position: 0, total: 0, time: 0, duration: 0, playing: false, playTime: 0,
  };
  // For bench/dashboard.py: what arrived and when (recording is off unless a test turns it on).
  const stats = window.hwmStats = { frames: 0, events: 0, covered: 0, record: false, arrivals: [], lastFrameAt: 0 };

  // ---- socket ------------------------------------------------------------------------------------------
  const socket = io({ auth: token ? { token } : {}, query: token ? { token } : {} });
  socket.on("connect", () => setConn(true));
  socket.on("disconnect", () => setConn(false));
  socket.on("connect_error", () => setConn(false));
  socket.on("hello", onHello);
  socket.on("frame", onFrame);
  socket.on("guide", (g) => { S.guide = g; renderGuide(); });

  function setConn(ok) {
    const c = $("#conn");
    c.textContent = ok ? (S.mode === "replay" ? "replay" : "live") : "disconnected";
    c.className = "pill " + (ok ? "ok" : "bad");
  }

  function onHello(h) {
    S.mode = h.mode; S.canControl = h.can_control; S.tokenRequired = h.token_required;
    S.ownsCluster = h.owns_cluster; S.scenarios = h.scenarios || []; S.liveAvailable = h.live_available;
    if (h.guide) S.guide = h.guide;
    S.replay = h.replay;
    document.body.dataset.mode = h.mode;
    $("#viewer").hidden = S.canControl;
    $("#timeline").hidden = h.mode !== "replay";
    $("#btn-live").disabled = !S.liveAvailable;
    setConn(true);
    if (h.replay) {
      S.total = h.replay.events; S.duration = h.replay.duration;
      $("#scrub").max = String(S.total);
      $("#replay-info").textContent = `${h.replay.run_dir}: ${h.replay.meta.run || ""} (${h.replay.meta.source || "?"}), ` +
        `${h.replay.events} events, ${h.replay.duration.toFixed(2)} s` + (h.replay.warnings.length ? `; ${h.replay.warnings.length} warnings` : "");
      $("#replay-dir").value = h.replay.run_dir;
    }
    const sel = $("#guide-scenario");
    sel.innerHTML = "";
    for (const s of S.scenarios) {
      const o = el("option", "", `${s.name.toUpperCase()}: ${s.title.replace(/^\S+\s+-\s+/, "")}`);
      o.value = s.name; sel.appendChild(o);
    }
    $("#start-note").textContent = S.ownsCluster ? "" : "Attached to a cluster this dashboard did not start: start others with `hwm-lab up`.";
    renderGuide(); applyRights();
    S.dirty = true;
  }

  function onFrame(f) {
    stats.frames += 1;
    const now = performance.timeOrigin + performance.now();
    stats.lastFrameAt = now;
    if (f.kind === "delta" && S.seq !== null && f.base !== S.seq) {
      socket.emit("resync", null, (snap) => { if (snap) onFrame(snap); });
      return;
    }
    const animate = f.kind === "delta" || (S.mode === "replay" && f.position > S.position && f.position - S.position <= 60);
    const fresh = f.kind === "delta" ? f.events : (animate ? f.events.filter((e) => e.n > S.position) : []);
    for (const e of fresh) startAnimation(e);
    if (f.kind === "snapshot") S.nodes = {};
    for (const n of f.nodes) S.nodes[n.id] = n;
    for (const id of f.gone || []) delete S.nodes[id];
    S.cluster = f.cluster; S.seq = f.seq; S.rate = f.rate; S.eventsNext = f.events_next;
    if (f.kind === "snapshot") {
      S.feed = f.events.slice().reverse(); S.skipped = 0; S.skippedByType = {}; S.feedFull = true;
    } else {
      if (f.events.length) S.feed = f.events.slice().reverse().concat(S.feed);
      S.skipped += f.skipped || 0;
      for (const [k, v] of Object.entries(f.skipped_by_type || {})) S.skippedByType[k] = (S.skippedByType[k] || 0) + v;
      if (S.feed.length > 400) S.feed.length = 400;
    }
    if (f.position !== undefined) {
      S.position = f.position; S.total = f.total; S.time = f.time; S.duration = f.duration;
    }
    stats.events += f.events.length;
    stats.covered += f.events.length + (f.skipped || 0);
    // per frame: when it arrived, when the server sent it, the first event number after it, events in full, summarised
    if (stats.record && f.kind === "delta") stats.arrivals.push([now, f.sent * 1000, f.events_next, f.events.length, f.skipped || 0]);
    S.dirty = true;
    schedule();
  }

  // ---- controls ----------------------------------------------------------------------------------------
  function control(action, args) {
    return new Promise((resolve) => {
      socket.emit("control", { action, args: args || {} }, (answer) => {
        if (!answer.ok && !["write", "read"].includes(action)) toast(answer.error || "refused", true);
        if (answer.guide) { S.guide = answer.guide; renderGuide(); }
        resolve(answer);
      });
    });
  }
  window.hwmControl = control;

  function toast(text, bad) {
    let t = $("#toast");
    if (!t) { t = el("div", "", ""); t.id = "toast"; t.setAttribute("role", "alert"); document.body.appendChild(t); }
    t.textContent = text;
    t.style.cssText = `position:fixed;left:50%;top:3.2em;transform:translateX(-50%);padding:.4em 1em;border-radius:6px;z-index:20;` +
      `background:${bad ? "#fbe0de" : "#d7f0df"};color:${bad ? "#8c1d18" : "#0d5a27"};font-weight:600;`;
    clearTimeout(toast.timer);
    toast.timer = setTimeout(() => t.remove(), 4000);
  }

  function showAnswer(text, refused) {
    const box = $("#answers");
    const a = el("div", "answer" + (refused ? " refused" : ""), text);
    box.prepend(a);
    while (box.children.length > 5) box.lastChild.remove();
  }

  function applyRights() {
    for (const b of document.querySelectorAll("#panel button, #panel select, #panel input, .badge button")) {
      if (b.closest("#tab-replay") && b.id !== "btn-open" && b.id !== "replay-dir") continue;
      if (b.closest(".tabs")) continue;
      b.disabled = !S.canControl || (S.mode === "replay" && !b.closest("#tab-replay"));
    }
    const noGuide = !S.ownsCluster;
    $("#btn-guide-start").disabled = !S.canControl || noGuide || S.mode === "replay";
    $("#btn-start").disabled = !S.canControl || noGuide || S.mode === "replay";
    $("#btn-live").disabled = !S.liveAvailable;
    renderGuideButtons();
  }

  $("#write-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const payload = $("#write-payload").value.trim();
    if (!payload) return;
    const node = $("#write-node").value;
    $("#btn-write").disabled = true;
    const a = await control("write", node ? { payload, node } : { payload });
    $("#btn-write").disabled = !S.canControl;
    if (a.ok) {
      showAnswer(`Wrote “${payload}” at index ${a.index} (generation ${a.generation}) via ${a.node}: acknowledged, the high-water mark covers it.`);
      $("#write-payload").value = nextPayload(payload);
    } else showAnswer(`Write “${payload}” not acknowledged: ${a.error}`, true);
  });
  function nextPayload(p) { const m = /^(.*?)(\d+)$/.exec(p); return m ? m[1] + (Number(m[2]) + 1) : p; }

  $("#read-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const index = Number($("#read-index").value), node = $("#read-node").value;
    const a = await control("read", { index, node });
    if (a.ok) showAnswer(`${node} serves index ${index}: “${a.payload}” (generation ${a.generation}); its high-water mark is ${a.hwm}.`);
    else showAnswer(`${node} refuses index ${index}: ${a.error}`, true);
  });

  $("#settings-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    delete $("#settings-form").dataset.editing;
    delete $("#settings-form").dataset.shown;
    const st = S.cluster.settings || {}, want = {};
    if ($("#set-fsync").value !== st.fsync) want.fsync = $("#set-fsync").value;
    if ($("#set-truncation").value !== st.truncation) want.truncation = $("#set-truncation").value;
    if (Number($("#set-delay").value) !== Math.round(st.delay_ms || 0)) want.delay_ms = Number($("#set-delay").value);
    if (!Object.keys(want).length) { toast("No change"); return; }
    control("settings", want).then((a) => { if (a.ok) toast("Settings applied"); });
  });
  $("#start-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const nodes = Number($("#start-nodes").value);
    $("#btn-start").disabled = true;
    control("start_cluster", { nodes }).then((a) => { $("#btn-start").disabled = !S.canControl; if (a.ok) toast(`Started a ${nodes}-node cluster`); });
  });
  $("#btn-heal-all").addEventListener("click", () => control("heal_all"));
  $("#guide-form").addEventListener("submit", (ev) => { ev.preventDefault(); control("guide_start", { scenario: $("#guide-scenario").value, truncation: $("#guide-truncation").value || null }); });
  $("#btn-next").addEventListener("click", () => control("guide_next"));
  $("#btn-back").addEventListener("click", () => control("guide_back"));
  $("#replay-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    socket.emit("replay_open", { dir: $("#replay-dir").value.trim() }, (a) => { if (!a.ok) toast(a.error, true); });
  });
  $("#btn-live").addEventListener("click", () => {
    S.playing = false;
    socket.emit("go_live", null, (a) => { if (!a.ok) toast(a.error, true); });
  });

  function nodeAction(id, action) { return control(action, { node: id }); }
  function isolate(id) {
    for (const o of S.cluster.ids) if (o !== id) control("cut", { src: id, dst: o, one_way: false });
  }

  // ---- tabs, help, large type ----------------------------------------------------------------------------
  function showTab(name) {
    for (const b of document.querySelectorAll(".tabs button")) b.setAttribute("aria-selected", String(b.dataset.tab === name));
    for (const t of document.querySelectorAll(".tab")) t.hidden = t.id !== "tab-" + name;
  }
  for (const b of document.querySelectorAll(".tabs button")) b.addEventListener("click", () => showTab(b.dataset.tab));
  const help = $("#help");
  $("#btn-help").addEventListener("click", () => { help.hidden = false; $("#btn-help-close").focus(); });
  $("#btn-help-close").addEventListener("click", () => { help.hidden = true; });
  function setLarge(on) {
    document.body.classList.toggle("large", on);
    $("#btn-large").setAttribute("aria-pressed", String(on));
    try { localStorage.setItem("hwm-large", on ? "1" : ""); } catch (e) { /* private mode */ }
    S.dirty = true; schedule();
  }
  $("#btn-large").addEventListener("click", () => setLarge(!document.body.classList.contains("large")));
  try { if (localStorage.getItem("hwm-large") || params.get("large")) setLarge(true); } catch (e) { /* ignore */ }
  window.addEventListener("resize", () => { S.dirty = true; schedule(); });

  document.addEventListener("keydown", (ev) => {
    if (ev.key === "Escape") { help.hidden = true; if (document.activeElement) document.activeElement.blur(); return; }
    const tag = (ev.target.tagName || "").toLowerCase();
    if (["input", "select", "textarea"].includes(tag) || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const k = ev.key;
    const ids = S.cluster.ids || [];
    const sel = S.selected;
    let handled = true;
    if (k === "?") help.hidden = !help.hidden;
    else if (/^[1-7]$/.test(k) && ids[Number(k) - 1]) { S.selected = ids[Number(k) - 1]; S.dirty = true; schedule(); }
    else if ((k === "k" || k === "K") && sel) nodeAction(sel, "kill");
    else if ((k === "r" || k === "R") && sel) nodeAction(sel, "restart");
    else if ((k === "p" || k === "P") && sel) nodeAction(sel, (S.nodes[sel] || {}).state === "paused" ? "resume" : "pause");
    else if ((k === "x" || k === "X") && sel) isolate(sel);
    else if (k === "h" || k === "H") control("heal_all");
    else if (k === "w" || k === "W") { showTab("client"); $("#write-payload").focus(); }
    else if (k === "e" || k === "E") { showTab("client"); $("#read-index").focus(); }
    else if (k === "s" || k === "S") control("settings", { delay_ms: (S.cluster.settings.delay_ms || 0) ? 0 : 1000 });
    else if (k === "n" || k === "N") { if (!$("#btn-next").disabled) control("guide_next"); }
    else if (k === "b" || k === "B") { if (!$("#btn-back").disabled) control("guide_back"); }
    else if (k === "l" || k === "L") setLarge(!document.body.classList.contains("large"));
    else if (k === " " && S.mode === "replay") togglePlay();
    else if ((k === "ArrowRight" || k === "ArrowLeft") && S.mode === "replay") {
      stopPlaying();
      seek({ position: S.position + (k === "ArrowRight" ? 1 : -1) * (ev.shiftKey ? 20 : 1) });
    } else handled = false;
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
  $("#scrub").addEventListener("input", () => { stopPlaying(); seek({ position: Number($("#scrub").value) }); });
  $("#btn-play").addEventListener("click", togglePlay);
  function togglePlay() {
    if (S.mode !== "replay") return;
    if (S.playing) { stopPlaying(); return; }
    S.playing = true;
    if (S.playing && S.position >= S.total) seek({ position: 0 });
    S.playTime = S.position >= S.total ? 0 : S.time;
    updatePlayButton();
    lastPlayTick = performance.now();
    if (S.playing) requestAnimationFrame(playTick);
  }
  function updatePlayButton() { $("#btn-play").textContent = S.playing ? "❚❚ Pause" : "▶ Play"; }
  let lastPlayTick = 0;
  function playTick(now) {
    if (!S.playing) return;
    const dt = (now - lastPlayTick) / 1000;
    if (dt >= 0.1) {  // ten seeks a second at most: the server answers with a frame each
      lastPlayTick = now;
      S.playTime += dt * Number($("#play-speed").value);
      const end = S.playTime >= S.duration;
      if (end) S.playTime = S.duration;
      seek({ time: S.playTime });
      if (end) { S.playing = false; updatePlayButton(); }  // the last seek above still lands
    }
    requestAnimationFrame(playTick);
  }

  // ---- animations --------------------------------------------------------------------------------------
  const CONFLICT_MS = 1500, REMOVE_MS = 800, SLIDE_MS = 800;
  function startAnimation(e) {
    if (e.type === "truncated") {
      const before = S.nodes[e.node];
      const payloadAt = {};
      if (before) for (const c of before.log) payloadAt[c[0]] = c;
      const removed = (e.removed || []).map((r) => {
        const known = payloadAt[r[0]];
        return [r[0], r[1], known && known[1] === r[1] ? known[2] : "?"];
      });
      S.anims[e.node] = { from: e.from_index, removed, t0: performance.now(), reason: e.reason, gen: e.conflicting_generation };
    }
    const delay = Number(S.cluster.settings && S.cluster.settings.delay_ms) || 0;
    if (delay < 100) return;
    const dur = Math.min(Math.max(delay, 200), 4000);
    const add = (src, dst, kind, label) => S.flights.push({ src, dst, kind, label, t0: performance.now(), dur });
    if (e.type === "replication_sent") add(e.node, e.to, e.first > e.last ? "heartbeat" : "request", e.first > e.last ? "♥" : (e.first === e.last ? `${e.first}` : `${e.first}-${e.last}`));
    else if (e.type === "replication_received") add(e.node, e.from, "response", "ack");
    else if (e.type === "replication_rejected") add(e.node, e.from, "refusal", "✗");
    else if (e.type === "election_started") for (const o of S.cluster.ids) { if (o !== e.node) add(e.node, o, "vote", "vote?"); }
    else if (e.type === "vote_granted") add(e.node, e.candidate, "vote", "yes");
  }

  // ---- drawing -----------------------------------------------------------------------------------------
  let scheduled = false;
  function schedule() { if (!scheduled) { scheduled = true; requestAnimationFrame(draw); } }

  function draw() {
    scheduled = false;
    const now = performance.now();
    if (S.dirty) { S.dirty = false; renderAll(now); }
    else renderLanes(now);
    renderFlights(now);
    const animating = Object.keys(S.anims).length || S.flights.length;
    if (animating) schedule();
  }

  function renderAll(now) {
    renderHeader(); renderLegend(); renderLanes(now); renderFeed(S.feedFull); S.feedFull = false;
    renderNodeButtons(); renderLinks();
    renderSelects(); renderTimeline();
    const rights = [S.canControl, S.mode, S.ownsCluster, S.liveAvailable, (S.cluster.ids || []).join()].join();
    if (rights !== S.rightsShown) { S.rightsShown = rights; applyRights(); }  // new buttons appear with new nodes
  }

  function renderHeader() {
    const c = S.cluster, leader = c.leader ? S.nodes[c.leader] : null;
    $("#summary").textContent = c.error ? `control API: ${c.error}` :
      `${(c.ids || []).length} nodes · leader ${leader ? leader.id + " (generation " + leader.generation + ")" : "none"} · ` +
      `high-water mark ${leader ? leader.hwm : "–"} · truncation ${c.settings.truncation || "?"} · fsync ${fmtFsync(c.settings.fsync)}` +
      ((c.settings.delay_ms || 0) ? ` · slow motion ${Math.round(c.settings.delay_ms)} ms` : "");
    $("#rate").textContent = S.mode === "live" ? `${Math.round(S.rate).toLocaleString()} events/s` : "";
    // When entries stream in, the window moves every frame: sliding every cell would keep the page busy
    // animating instead of drawing the next frame on time.
    document.body.classList.toggle("busy", S.mode === "live" && S.rate > 400);
  }
  function fmtFsync(f) { if (!f) return "?"; if (typeof f === "string") return f; const v = new Set(Object.values(f)); return v.size === 1 ? [...v][0] : Object.entries(f).map(([k, x]) => k + " " + x).join(", "); }

  function renderLegend() {
    const gens = new Set();
    for (const n of Object.values(S.nodes)) for (const c of n.log) gens.add(c[1]);
    const key = [...gens].sort().join();
    const L = $("#legend");
    if (L.dataset.gens === key) return;
    L.dataset.gens = key;
    L.innerHTML = "";
    L.appendChild(el("span", "", "generation:"));
    for (const g of [...gens].filter((g) => g !== null).sort((a, b) => a - b)) {
      const s = el("span", ""); const sw = el("span", "sw cell g" + gcls(g)); sw.style.position = "static";
      s.appendChild(sw); s.appendChild(document.createTextNode(String(g))); L.appendChild(s);
    }
    const u = el("span", ""); u.appendChild(el("span", "sw uncommitted")); u.appendChild(document.createTextNode("above that node's high-water mark: not visible to clients")); L.appendChild(u);
    const m = el("span", "", "▲m match index · ▲n next index (the leader's view of each follower)"); L.appendChild(m);
  }
  function gcls(g) { return g ? ((g - 1) % 7) + 1 : 0; }

  const laneEls = new Map();
  function laneFor(id) {
    let lane = laneEls.get(id);
    if (!lane) {
      lane = el("div", "lane"); lane.id = "lane-" + id; lane.dataset.node = id;
      const badge = el("div", "badge");
      badge.appendChild(el("div", "name", id));
      badge.appendChild(el("div", "line l1"));
      badge.appendChild(el("div", "line l2"));
      const buttons = el("div", "buttons");
      buttons.appendChild(el("span", "state"));
      for (const [cls, label, action] of [["btn-kill danger", "kill", "kill"], ["btn-restart", "restart", "restart"], ["btn-pause", "pause", "pause"], ["btn-resume", "resume", "resume"]]) {
        const b = el("button", cls, label); b.type = "button"; b.title = `${label} ${id}`;
        b.addEventListener("click", () => nodeAction(id, action));
        buttons.appendChild(b);
      }
      badge.appendChild(buttons);
      lane.appendChild(badge);
      const gutter = el("div", "gutter"); gutter.title = "messages between nodes travel here (slow motion)";
      lane.appendChild(gutter); lane._gutter = gutter;
      const track = el("div", "track");
      lane.appendChild(track);
      lane.addEventListener("click", (ev) => { if (!ev.target.closest("button")) { S.selected = id; S.dirty = true; schedule(); } });
      lane._cells = new Map(); lane._track = track; lane._extra = new Map();
      laneEls.set(id, lane);
    }
    return lane;
  }

  function windowFor(trackWidth) {
    const cw = cellWidth();
    const slots = Math.max(4, Math.floor(trackWidth / cw));
    let maxEnd = 0, minStart = Infinity;
    for (const n of Object.values(S.nodes)) { maxEnd = Math.max(maxEnd, n.log_end || 0); minStart = Math.min(minStart, n.log_start || 1); }
    const leader = S.cluster.leader ? S.nodes[S.cluster.leader] : null;
    const hwm = leader ? leader.hwm : Math.max(0, ...Object.values(S.nodes).map((n) => n.hwm || 0));
    let start = Math.max(1, maxEnd - slots + 3);
    if (hwm && hwm < start + 1) start = Math.max(1, hwm - 1);  // keep the high-water mark in view
    const offset = start > 1 ? 1 : 0;  // slot 0 holds the collapsed older entries
    return { start, offset, slots, cw, x: (i) => (i - start + offset) * cw };
  }
  function cellWidth() { return parseFloat(getComputedStyle(document.body).getPropertyValue("--cell")) || 40; }

  function renderLanes(now) {
    const wrap = $("#lanes");
    const ids = S.cluster.ids && S.cluster.ids.length ? S.cluster.ids : Object.keys(S.nodes).sort();
    for (const [id, lane] of laneEls) if (!ids.includes(id)) { lane.remove(); laneEls.delete(id); }
    ids.forEach((id, i) => { const lane = laneFor(id); if (wrap.children[i] !== lane) wrap.insertBefore(lane, wrap.children[i] || null); });
    const firstTrack = ids.length ? laneFor(ids[0])._track : null;
    const W = windowFor(firstTrack ? firstTrack.clientWidth : 600);
    const leader = S.cluster.leader ? S.nodes[S.cluster.leader] : null;
    for (const id of ids) {
      const n = S.nodes[id]; if (!n) continue;
      drawLane(laneFor(id), n, leader, W, now);
    }
    // the leader's high-water mark, across every lane
    const line = $("#hwm-line");
    if (leader && firstTrack) {
      const left = firstTrack.offsetLeft + W.x(leader.hwm + 1) - cellGap() / 2 - 2;  // on the lanes' HWM bars
      line.hidden = false; line.style.left = left + "px";
      line.firstChild.textContent = `leader ${leader.id}: high-water mark ${leader.hwm}`;
    } else line.hidden = true;
  }
  function cellGap() { return 4; }

  function drawLane(lane, n, leader, W, now) {
    const id = n.id;
    const state = n.state || "running";
    const isLeader = S.cluster.leader === id;
    const stale = n.role === "leader" && !isLeader && state !== "killed";  // it still believes it leads
    lane.className = "lane " + state.replace(" ", "-") + (S.selected === id ? " selected" : "") + (isLeader ? " leader" : "");
    const name = lane.querySelector(".name");
    name.className = "name" + (isLeader ? " leader" : "");
    const role = state === "killed" ? "—" : (isLeader ? "★ leader" : (n.role || "—"));
    const l1 = lane.querySelector(".l1");
    const l1key = [role, isLeader, stale, n.generation].join();
    if (l1.dataset.key !== l1key) {
      l1.dataset.key = l1key;
      l1.innerHTML = "";
      const r = el("span", "role " + (isLeader ? "leader" : stale ? "stale" : ""), role);
      if (stale) r.title = `${id} still believes it leads generation ${n.generation}; a newer generation has a leader`;
      l1.appendChild(r);
      l1.appendChild(document.createTextNode(` · generation ${n.generation}`));
    }
    const chip = lane.querySelector(".buttons .state");
    chip.textContent = state; chip.className = "state " + state.replace(" ", "-");
    const l2 = lane.querySelector(".l2"), l2text = `log end ${n.log_end} · HWM ${n.hwm}`;
    l2.classList.toggle("stale", !!n.stale);
    l2.title = n.stale ? `${id} did not answer the supervisor just now: its last known figures` : "";
    if (l2.textContent !== l2text) l2.textContent = l2text;
    const b = lane.querySelector(".buttons");
    b.querySelector(".btn-kill").hidden = state === "killed";
    b.querySelector(".btn-restart").hidden = state !== "killed";
    b.querySelector(".btn-pause").hidden = state !== "running" && state !== "cut off";
    b.querySelector(".btn-resume").hidden = state !== "paused";

    const anim = S.anims[id];
    let phase = null;
    if (anim) {
      const t = now - anim.t0;
      phase = t < CONFLICT_MS ? "conflict" : t < CONFLICT_MS + REMOVE_MS ? "removing" : t < CONFLICT_MS + REMOVE_MS + SLIDE_MS ? "slide" : null;
      if (!phase) { delete S.anims[id]; }
    }
    const want = new Map();
    const last = W.start + W.slots - W.offset - 1;
    if (W.start > 1) want.set("older", { cls: "cell collapsed", x: 0, html: [`1–${W.start - 1}`, "older", ""], title: `${W.start - 1} older entries collapsed` });
    for (const c of n.log) {
      const [i, g, p] = c;
      if (i < W.start || i > last) continue;
      if (phase && phase !== "slide" && i >= anim.from) continue;  // the conflicting entries are still shown
      const uncommitted = i > n.hwm;
      want.set("c" + i + ":" + g + ":" + p, { cls: `cell g${gcls(g)}${uncommitted ? " uncommitted" : ""}${phase === "slide" && i >= anim.from ? " slide-in" : ""}`,
        x: W.x(i), html: [String(i), String(p), g === null ? "" : "g" + g],
        title: `${id}[${i}] = ${p}, generation ${g}` + (uncommitted ? ` — above ${id}'s high-water mark ${n.hwm}: not visible to clients` : " — committed") });
    }
    if (phase === "conflict" || phase === "removing") {
      for (const [i, g, p] of anim.removed) {
        if (i < W.start || i > last) continue;
        want.set("x" + i, { cls: `cell g${gcls(g)} ${phase === "conflict" ? "conflict" : "conflict removing"}`, x: W.x(i),
          html: [String(i), String(p), "g" + g], title: `${id}[${i}] conflicts with the leader: truncated` });
      }
    }
    syncCells(lane, want);
    // markers: this node's high-water mark, what is above it, and the leader's match/next index for it
    const extras = new Map();
    const hx = W.x(n.hwm + 1) - cellGap() / 2 - 2;
    extras.set("x-hwm", { cls: "mark", x: hx, title: `${id}'s high-water mark: ${n.hwm}` });
    extras.set("x-hwm-text", { cls: "mark-label", x: Math.max(0, hx - 44), text: `HWM ${n.hwm}` });
    if (n.log_end > n.hwm && state !== "killed") extras.set("above", { cls: "above-label", x: hx + 8, text: "uncommitted → not visible to clients" });
    if (leader && leader.id !== id && leader.match_index && leader.match_index[id] !== undefined) {
      const m = leader.match_index[id], nx = leader.next_index ? leader.next_index[id] : undefined;
      if (m >= W.start - 1) extras.set("match", { cls: "index-marker", x: Math.max(0, W.x(Math.max(m, 1)) + (m ? 2 : -4)), text: `▲m ${m}`, title: `${leader.id}: ${id}'s match index ${m}` });
      if (nx !== undefined && nx >= W.start) extras.set("next", { cls: "index-marker", x: W.x(nx) + 2, text: `▲n ${nx}`, title: `${leader.id}: ${id}'s next index ${nx}` });
      if (extras.has("match") && extras.has("next") && Math.abs(extras.get("match").x - extras.get("next").x) < 48) extras.get("next").x = extras.get("match").x + 48;
    }
    if (phase === "conflict" || phase === "removing") {
      extras.set("note", { cls: "conflict-note", x: W.x(anim.from), text: anim.reason === "conflict" ? `conflict with generation ${anim.gen}: truncating from ${anim.from}` : `truncating from ${anim.from} (${anim.reason})` });
    }
    syncExtras(lane, extras);
  }

  function syncCells(lane, want) {
    const have = lane._cells;
    for (const [key, node] of have) if (!want.has(key)) { node.remove(); have.delete(key); }
    for (const [key, spec] of want) {
      let node = have.get(key);
      if (!node) {
        node = el("div", "");
        node.appendChild(el("span", "i")); node.appendChild(el("span", "p")); node.appendChild(el("span", "g"));
        lane._track.appendChild(node); have.set(key, node);
      }
      if (node.className !== spec.cls) node.className = spec.cls;
      node.style.left = spec.x + "px";
      node.title = spec.title;
      const [a, b, c] = spec.html;
      if (node.children[0].textContent !== a) node.children[0].textContent = a;
      if (node.children[1].textContent !== b) node.children[1].textContent = b;
      if (node.children[2].textContent !== c) node.children[2].textContent = c;
      node.dataset.key = key;
    }
  }
  function syncExtras(lane, want) {
    const have = lane._extra;
    for (const [key, node] of have) if (!want.has(key)) { node.remove(); have.delete(key); }
    for (const [key, spec] of want) {
      let node = have.get(key);
      if (!node) { node = el("div", ""); lane._track.appendChild(node); have.set(key, node); }
      node.className = spec.cls + " " + key;
      node.style.left = spec.x + "px";
      if (spec.text !== undefined && node.textContent !== spec.text) node.textContent = spec.text;
      if (spec.title) node.title = spec.title;
    }
  }

  // messages in flight (slow motion): dots travelling between the lanes, just left of the logs
  function renderFlights(now) {
    const svg = $("#wires");
    const wrap = $("#lanes-wrap").getBoundingClientRect();
    S.flights = S.flights.filter((f) => now - f.t0 < f.dur);
    while (svg.firstChild) svg.firstChild.remove();
    if (!S.flights.length) return;
    const colors = { request: "#0072B2", heartbeat: "#7a828c", response: "#009E73", refusal: "#D55E00", vote: "#CC79A7" };
    for (const f of S.flights) {
      const a = laneEls.get(f.src), b = laneEls.get(f.dst);
      if (!a || !b) continue;
      const ra = a._gutter.getBoundingClientRect(), rb = b._gutter.getBoundingClientRect();
      const back = f.kind === "response" || f.kind === "refusal";
      const x0 = ra.left - wrap.left + ra.width * (back ? 0.62 : 0.3), y0 = ra.top - wrap.top + ra.height / 2, y1 = rb.top - wrap.top + rb.height / 2;
      const t = (now - f.t0) / f.dur;
      const bulge = (back ? 1 : -1) * 6;
      const x = x0 + bulge * 4 * t * (1 - t), y = y0 + (y1 - y0) * t;
      const ns = "http://www.w3.org/2000/svg";
      const c = document.createElementNS(ns, "circle");
      c.setAttribute("cx", x); c.setAttribute("cy", y); c.setAttribute("r", 8); c.setAttribute("stroke", "#fff"); c.setAttribute("stroke-width", 2); c.setAttribute("fill", colors[f.kind] || "#333");
      svg.appendChild(c);
      const tx = document.createElementNS(ns, "text");
      tx.setAttribute("x", x + 10); tx.setAttribute("y", y + 4); tx.setAttribute("text-anchor", "start"); tx.setAttribute("class", "msg"); tx.setAttribute("fill", colors[f.kind] || "#333");
      tx.textContent = f.label; svg.appendChild(tx);
    }
  }

  const IMPORTANT = new Set(["became_leader", "truncated", "node_killed", "node_restarted", "node_paused", "node_resumed",
    "link_cut", "link_healed", "read_refused", "election_started", "write_failed", "step", "expectation", "node_started"]);
  const ROUTINE = new Set(["replication_sent", "replication_received", "match_index_updated", "generation_changed", "write_requested", "vote_granted"]);
  // The feed is the costliest thing to draw: new lines are added at the top, old ones dropped at the bottom,
  // and the whole list is rebuilt only for a snapshot or a change of filter.
  const FEED_LINES = 150;
  let feedShown = null;  // the newest event drawn (object identity)
  function feedLine(e) {
    const li = el("li", (IMPORTANT.has(e.type) ? "important " : "") + e.type + (e.type === "expectation" && !e.ok ? " expect-fail" : ""));
    li.appendChild(el("span", "t", (e.time !== undefined ? Number(e.time).toFixed(2) : "") + "s"));
    li.appendChild(el("span", "who", e.node === "cluster" ? "⚙" : e.node));
    li.appendChild(el("span", "x", e.text || e.type));
    return li;
  }
  function renderFeed(full) {
    const hide = $("#hide-routine").checked;
    const list = $("#feed");
    const fresh = [];
    for (const e of S.feed) {
      if (!full && e === feedShown) break;
      if (hide && ROUTINE.has(e.type)) continue;
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
    const skipped = Object.entries(S.skippedByType).sort((a, b) => b[1] - a[1]).slice(0, 3).map(([k, v]) => `${v.toLocaleString()} ${k}`).join(", ");
    $("#skipped").textContent = S.skipped ? `+ ${S.skipped.toLocaleString()} routine events summarised (${skipped})` : "";
  }
  $("#hide-routine").addEventListener("change", () => { S.feedFull = true; S.dirty = true; schedule(); });

  function renderNodeButtons() {
    const box = $("#node-buttons");
    const ids = S.cluster.ids || [];
    if (box.dataset.ids !== ids.join()) {
      box.innerHTML = ""; box.dataset.ids = ids.join();
      for (const id of ids) {
        const row = el("div", "nb"); row.appendChild(el("b", "", id));
        for (const a of ["kill", "restart", "pause", "resume"]) {
          const b = el("button", a === "kill" ? "danger" : "", a); b.type = "button"; b.id = `nb-${a}-${id}`;
          b.addEventListener("click", () => nodeAction(id, a)); row.appendChild(b);
        }
        const s = el("span", "state"); s.id = "nb-state-" + id; row.appendChild(s);
        box.appendChild(row);
      }
    }
    for (const id of ids) {
      const n = S.nodes[id]; const s = document.getElementById("nb-state-" + id);
      if (n && s) { s.textContent = n.state; s.className = "state " + n.state.replace(" ", "-"); }
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
      table.dataset.ids = ids.join(); table.innerHTML = "";
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
      b.title = `${s} → ${d}: ${isCut ? "cut (click to heal)" : "connected (click to cut)"}`;
    }
  }

  function renderSelects() {
    const ids = S.cluster.ids || [];
    for (const [sel, first] of [["#write-node", "to the leader"], ["#read-node", null]]) {
      const s = $(sel);
      if (s.dataset.ids === ids.join()) continue;
      const keep = s.value; s.dataset.ids = ids.join(); s.innerHTML = "";
      if (first) { const o = el("option", "", first); o.value = ""; s.appendChild(o); }
      for (const id of ids) { const o = el("option", "", first ? `to ${id}` : `from ${id}`); o.value = id; s.appendChild(o); }
      if ([...s.options].some((o) => o.value === keep)) s.value = keep;
    }
  }

  function renderTimeline() {
    if (S.mode !== "replay") return;
    const scrub = $("#scrub");
    scrub.max = String(S.total);
    if (document.activeElement !== scrub) scrub.value = String(S.position);
    $("#scrub-label").textContent = `event ${S.position.toLocaleString()} of ${S.total.toLocaleString()} · ${Number(S.time).toFixed(2)} s of ${Number(S.duration).toFixed(2)} s`;
  }

  function renderGuide() {
    const g = S.guide, box = $("#guide");
    if (!g || !g.active) {
      box.innerHTML = "";
      const p = el("p", "muted small", g && g.error ? g.error : "A guided scenario starts a fresh cluster and runs the scenario one narrated step at a time: press Next to run a step, Back to return to the one before.");
      box.appendChild(p);
    } else {
      box.innerHTML = "";
      box.appendChild(el("div", "gtitle", g.title + (g.truncation ? ` (truncation: ${g.truncation})` : "")));
      const label = el("div", "small", g.busy ? `Running… (step ${Math.min(g.done + 1, g.total)} of ${g.total})` : `Step ${g.done} of ${g.total}`);
      label.id = "guide-progress"; box.appendChild(label);
      const bar = el("div", "progress"); const fill = el("div", ""); fill.style.width = (100 * g.done / g.total) + "%"; bar.appendChild(fill); box.appendChild(bar);
      box.appendChild(el("div", "steptext", g.done ? g.text : g.description || "Press Next to run the first step."));
      for (const o of g.outcomes || []) box.appendChild(el("div", "outcome small " + (o.ok ? "ok" : "fail"), `${o.ok ? "✓" : "✗"} ${o.name}${o.detail ? " — " + o.detail : ""}`));
      if (g.error) box.appendChild(el("div", "outcome fail small", g.error));
      if (g.next_text) box.appendChild(el("div", "next-preview", "Next: " + g.next_text));
      else if (g.done === g.total) box.appendChild(el("div", "next-preview", g.passed ? "Done: every expectation held." : "Done."));
    }
    renderGuideButtons();
  }
  function renderGuideButtons() {
    const g = S.guide, can = S.canControl && g && g.active && !g.busy;
    $("#btn-next").disabled = !(can && g.done < g.total);
    $("#btn-back").disabled = !(can && g.done > 0);
  }

  schedule();
})();
