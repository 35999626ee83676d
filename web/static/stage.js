/* The stage: one lane per node (its server disc with the election timer, its log as cells, its high-water
   mark), the leader's mark across the lanes, cut and slow links in the gutter, and messages travelling from
   lane to lane in the column of the entries they carry. It draws the page's state S and owns nothing else.
   Plain DOM and SVG; geometry is measured once per layout, so that an animation frame only moves things. */
(function () {
  "use strict";
  const T = window.HWM_TEXT;
  const SVGNS = "http://www.w3.org/2000/svg";
  const CONFLICT_MS = 1800, REMOVE_MS = 800, SLIDE_MS = 800;
  const MAX_FLIGHTS = 80;     // beyond this, the oldest quiet messages make room
  const MIN_SLOTS = 6;        // a lane shows at least this many entries before cells shrink
  const ROOMY_PX = 120;       // a lane this tall holds a cell of three 18 px lines, and four lines of node details
  const SNUG_PX = 70;         // large type in a shorter lane (a question on the stage): a cell of two 18 px lines
                              // (index and generation side by side over the payload), three lines of node details
  const SNUG_CELL = 46;       // the height of such a cell
  const RING_R = 26, RING_C = 2 * Math.PI * RING_R;
  // Okabe-Ito: safe for the common colour-vision deficiencies. From generation 8 on the colours come back with
  // a pattern (dots, then bars, then a grid), and every cell and message also prints its generation.
  const COLORS = ["#d9dde2", "#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7"];
  const DARK = new Set([3, 5, 6]);

  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const svg = (tag, attrs) => {
    const e = document.createElementNS(SVGNS, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    return e;
  };
  const hue = (g) => (g ? ((g - 1) % 7) + 1 : 0);
  const pattern = (g) => (g ? Math.floor((g - 1) / 7) % 4 : 0);
  const gclass = (g) => `g${hue(g)}` + (pattern(g) ? ` gp${pattern(g)}` : "");

  window.HWMStage = function (S, hooks) {
    const K = window.HWM_KINDS;  // the event kinds, from their declarations (web/narrate.py FEED_KINDS)
    const lanesBox = document.getElementById("lanes"), wrap = document.getElementById("lanes-wrap");
    const wires = document.getElementById("wires"), linksSvg = document.getElementById("links-svg");
    const hwmLine = document.getElementById("hwm-line");
    const laneEls = new Map();
    let geo = null;             // measured layout: window of indexes, cell size, each lane's place
    let flights = [];
    const anims = {};           // node -> truncation being shown
    let lastRings = 0;

    // ---- lanes ---------------------------------------------------------------------------------------
    function laneFor(id) {
      let lane = laneEls.get(id);
      if (lane) return lane;
      lane = el("div", "lane"); lane.id = "lane-" + id; lane.dataset.node = id;
      const badge = el("div", "badge");
      const server = svg("svg", { class: "server", viewBox: "0 0 64 64", "aria-hidden": "true" });
      server.appendChild(svg("circle", { class: "ring-bg", cx: 32, cy: 32, r: RING_R }));
      const ring = svg("circle", { class: "ring", cx: 32, cy: 32, r: RING_R, "stroke-dasharray": `0 ${RING_C}`,
                                   transform: "rotate(-90 32 32)" });
      server.appendChild(ring);
      const disc = svg("circle", { class: "disc", cx: 32, cy: 32, r: 20 });
      server.appendChild(disc);
      const name = svg("text", { class: "sname", x: 32, y: 33 }); name.textContent = id;
      server.appendChild(name);
      const mark = svg("text", { class: "smark", x: 54, y: 14 });
      server.appendChild(mark);
      const title = svg("title"); server.appendChild(title);
      badge.appendChild(server);
      const info = el("div", "info");
      info.appendChild(el("div", "line l1"));
      info.appendChild(el("div", "line l2"));
      const l3 = el("div", "line l3");
      l3.appendChild(el("span", "state"));
      l3.appendChild(el("span", "cutchips"));
      const buttons = el("span", "buttons");
      for (const action of ["kill", "restart", "pause", "resume"]) {
        const b = el("button", `btn-${action}` + (action === "kill" ? " danger" : ""), T.buttons[action]);
        b.type = "button"; b.title = T.buttonTitle(action, id);
        b.addEventListener("click", () => hooks.nodeAction(id, action));
        buttons.appendChild(b);
      }
      l3.appendChild(buttons);
      info.appendChild(l3);
      badge.appendChild(info);
      lane.appendChild(badge);
      const gutter = el("div", "gutter");
      lane.appendChild(gutter);
      const track = el("div", "track");
      lane.appendChild(track);
      lane.addEventListener("click", (ev) => { if (!ev.target.closest("button")) hooks.select(id); });
      Object.assign(lane, { _cells: new Map(), _extra: new Map(), _track: track, _gutter: gutter, _ring: ring,
                            _disc: disc, _mark: mark, _title: title, _server: server });
      laneEls.set(id, lane);
      return lane;
    }

    function ids() { return S.cluster.ids && S.cluster.ids.length ? S.cluster.ids : Object.keys(S.nodes).sort(); }

    // ---- layout: the lanes share the stage's height; cells are as big as the lanes and the width allow ------
    // Measuring forces the browser to lay the page out: done only when something that sizes the lanes changed.
    let measuredFor = null;
    function layout() {
      const list = ids();
      for (const [id, lane] of laneEls) if (!list.includes(id)) { lane.remove(); laneEls.delete(id); }
      list.forEach((id, i) => { const lane = laneFor(id); if (lanesBox.children[i] !== lane) lanesBox.insertBefore(lane, lanesBox.children[i] || null); });
      const n = String(Math.max(1, list.length));
      if (wrap.style.getPropertyValue("--n") !== n) wrap.style.setProperty("--n", n);  // restyles every cell
      if (!list.length) { geo = null; measuredFor = null; return; }
      const key = [list.join(), innerWidth, innerHeight, document.body.className, hooks.sizing(), S.showHeartbeats].join("|");
      if (key !== measuredFor || !geo) { measure(list); measuredFor = key; }
      geo.W = windowFor(geo.trackW - windowReserve(), geo.cw);
    }
    // What the window must keep free right of the newest entry now: the heartbeats' column, and whatever of an
    // "above HWM" tag does not already sit over the entries it names.
    function windowReserve() {
      const hb = S.showHeartbeats ? geo.em * 6 : 0;
      let maxEnd = 0, tag = 0;
      for (const n of Object.values(S.nodes)) maxEnd = Math.max(maxEnd, n.log_end || 0);
      for (const n of Object.values(S.nodes)) {
        if (n.state === "killed" || !(n.log_end > n.hwm)) continue;
        tag = Math.max(tag, textWidth(T.above, 0.7, 0, "above-label") + geo.em - (maxEnd - n.hwm) * geo.cw);
      }
      return Math.min(geo.reserve, hb + Math.max(0, tag));
    }
    // Room kept right of the newest entry, always (so that nothing jumps when an entry is written): the "above
    // HWM" tag that starts at the high-water mark, and the column where heartbeats travel, clear of every label.
    // Old committed entries give way (collapsed into the first slot), and cells shrink before they do.
    function reserve(trackW, em) {
      const hb = S.showHeartbeats ? em * 6 : 0;
      return Math.min(trackW * 0.45, textWidth(T.above, 0.7, em, "above-label") + em + hb);
    }
    const widths = new Map();
    // The width of a label in the stage's type, measured once per size; `cls`: the label's own class, whose type
    // the stylesheet sets (large type holds a tag at 18 px or more, more than `scale` em).
    function textWidth(text, scale, em, cls) {
      em = em || geo.em;
      const key = [text, em, scale, cls || "", cls ? wrap.className + document.body.className : ""].join("|");
      if (!widths.has(key)) {
        const probe = el("span", cls || "", text);
        probe.style.cssText = "position:absolute;visibility:hidden;white-space:nowrap;font-weight:700;transform:none;" +
                              (cls ? "" : `font-size:${scale}em`);
        laneFor(ids()[0])._track.appendChild(probe);
        widths.set(key, probe.offsetWidth);
        probe.remove();
      }
      return widths.get(key);
    }
    function measure(list) {
      const first = laneFor(list[0]);
      const laneH = first.clientHeight;
      const em = parseFloat(getComputedStyle(first).fontSize) || 15;
      // A row above the cells for the HWM tag, one below for the leader's match/next marks; lanes too short
      // for both (7 nodes, large type, 720p) keep the cells big and drop the marks.
      // (in large type the row holds the HWM tag in 18 px type at least)
      const large = document.body.classList.contains("large");
      const row = Math.round(large ? Math.max(em * 0.95, 25) : em * 0.95);
      // (large type: a row above the cells for the tags, one below for the marks, and a two-line cell between)
      const compact = large ? laneH < 2 * row + SNUG_CELL + 6 : laneH < em * 6.4;
      wrap.classList.toggle("compact", compact);
      // Large type, lanes tall enough for three lines of 18 px in a cell and four of node details: the back row's
      // sizes (dashboard.css); shorter lanes (a question on the stage) keep them, two lines to a cell ("snug"); only
      // lanes shorter still keep the sizes that fit them. (It changes the header column's width: the track is
      // measured after.)
      wrap.classList.toggle("roomy", large && laneH >= SNUG_PX);
      wrap.classList.toggle("snug", large && laneH >= SNUG_PX && laneH < ROOMY_PX);
      const trackW = first._track.clientWidth;
      const rows = compact ? row + 4 : 2 * row;
      const kept = reserve(trackW, em);
      const cell = Math.max(24, Math.min(laneH - rows - 6, (trackW - kept) / MIN_SLOTS, em * 6.2));
      // Short lanes (7 nodes, large type, 720p) make short cells, not narrow ones: a payload needs its width.
      const narrowest = wrap.classList.contains("roomy") ? em * 3 : em * 2.4;  // a payload at 20 px needs 3 em
      const cw = Math.round(Math.max(cell, Math.min((trackW - kept) / MIN_SLOTS, narrowest)));
      wrap.style.setProperty("--cell", cw + "px");
      wrap.style.setProperty("--cell-h", Math.round(Math.max(22, Math.min(cell, laneH - rows - 6))) + "px");
      wrap.style.setProperty("--row", row + "px");
      const places = {};
      for (const id of list) {
        const lane = laneFor(id);
        places[id] = { top: lane.offsetTop, mid: lane.offsetTop + lane._track.offsetTop + row + Math.min(cell, laneH - rows - 6) / 2,
                       height: lane.offsetHeight, trackLeft: lane._track.offsetLeft + lane.offsetLeft,
                       gutterLeft: lane._gutter.offsetLeft + lane.offsetLeft, gutterW: lane._gutter.offsetWidth };
      }
      geo = { cw, places, trackW, em, reserve: kept };
    }

    function windowFor(trackWidth, cw) {
      const slots = Math.max(4, Math.floor(trackWidth / cw));
      let maxEnd = 0;
      for (const n of Object.values(S.nodes)) maxEnd = Math.max(maxEnd, n.log_end || 0);
      const leader = S.cluster.leader ? S.nodes[S.cluster.leader] : null;
      const hwm = leader ? leader.hwm : Math.max(0, ...Object.values(S.nodes).map((n) => n.hwm || 0));
      // The newest entries first; the high-water mark's bar always (an uncommitted stretch longer than the lane
      // is the one case where the newest give way to it).
      let start = Math.max(1, maxEnd - slots + 2);
      if (hwm && hwm + 1 < start) start = hwm + 1;
      const offset = start > 1 ? 1 : 0;  // slot 0 holds the collapsed older entries
      return { start, offset, slots, last: start + slots - offset - 1, x: (i) => (i - start + offset) * cw };
    }

    // ---- one full drawing of the lanes (on every frame the server pushes) ---------------------------------
    function render(now) {
      layout();
      if (!geo) { hwmLine.hidden = true; linksSvg.replaceChildren(); return; }
      const leader = S.cluster.leader ? S.nodes[S.cluster.leader] : null;
      for (const id of ids()) { const n = S.nodes[id]; if (n) drawLane(laneFor(id), n, leader, now); }
      if (leader) {  // its label; each lane draws its own stretch of the line (see drawLane)
        const p = geo.places[leader.id];
        hwmLine.hidden = false;
        const left = p.trackLeft + geo.W.x(leader.hwm + 1) - 4;
        hwmLine.style.left = left + "px";
        const label = hwmLine.firstChild, text = T.leaderLine(leader.id, leader.hwm);
        if (label.textContent !== text) label.textContent = text;
        // the label reads rightwards from the line, or leftwards when that would leave the stage
        const flip = left + textWidth(text, 0.75, 0, "hwm-label") + geo.em > wrap.clientWidth;
        label.classList.toggle("flip", flip);
      } else hwmLine.hidden = true;
      drawLinks();
      rings(now, true);
    }

    function drawLane(lane, n, leader, now) {
      const id = n.id, W = geo.W, cw = geo.cw;
      const state = n.state || "running";
      const isLeader = S.cluster.leader === id;
      const stale = n.role === "leader" && !isLeader && state !== "killed";  // it still believes it leads
      lane.className = "lane " + state.replace(" ", "-") + (S.selected === id ? " selected" : "") + (isLeader ? " leader" : "");
      const role = state === "killed" ? T.roleNone : (isLeader ? T.roleLeader : (n.role ? T.role(n.role) : T.roleNone));
      const l1 = lane.querySelector(".l1"), l1key = [role, isLeader, stale, n.generation].join();
      if (l1.dataset.key !== l1key) {
        l1.dataset.key = l1key; l1.replaceChildren();
        const r = el("span", "role " + (isLeader ? "leader" : stale ? "stale" : ""), role);
        if (stale) r.title = T.staleRole(id, n.generation);
        l1.appendChild(r);
        l1.appendChild(el("span", "sep", " · "));
        l1.appendChild(el("span", "gen", T.generation(n.generation)));
      }
      let l2text = n.stale ? T.lastKnown(T.logLine(n.log_end, n.hwm)) : T.logLine(n.log_end, n.hwm);
      if (state === "exited" && n.exit_reason) l2text = T.exitedLine(l2text, n.exit_reason);  // "fsync failed: ..."
      const l2 = lane.querySelector(".l2");
      l2.classList.toggle("stale", !!n.stale);
      l2.title = n.stale ? T.staleTitle(id) : (state === "exited" && n.exit_reason ? n.exit_reason : "");
      if (l2.textContent !== l2text) l2.textContent = l2text;
      const chip = lane.querySelector(".state");
      if (chip.textContent !== T.state(state)) chip.textContent = T.state(state);
      chip.className = "state " + state.replace(" ", "-");
      chip.title = state === "exited" ? (n.exit_reason || "") : "";  // why it stopped (the feed says it too)
      const cuts = state === "cut off" ? [] : (S.cluster.links || []).filter((l) => l.cut && (l.src === id || l.dst === id));
      const disk = n.disk_full ? T.diskFullChip : "";
      const chips = lane.querySelector(".cutchips"), chipText = [disk, cutChips(id, cuts)].filter(Boolean).join(" ");
      const chipKey = [chipText, innerWidth, document.body.className].join("|");
      if (chips.dataset.key !== chipKey) {  // (the text shown may be the count: compare what was meant)
        chips.dataset.key = chipKey;
        chips.textContent = chipText;
        chips.title = cuts.map((l) => T.cutLink(l.src, l.dst, false)).join("\n");
        // Still too long for the line (large type, many cuts): a count, the links in its tooltip.
        if (chips.scrollWidth > chips.clientWidth + 1) chips.textContent = [disk, cuts.length ? T.cutCount(cuts.length) : ""].filter(Boolean).join(" ");
      }
      const b = lane.querySelector(".buttons");
      b.querySelector(".btn-kill").hidden = state === "killed" || state === "exited";
      b.querySelector(".btn-restart").hidden = state !== "killed" && state !== "exited";
      b.querySelector(".btn-pause").hidden = state !== "running" && state !== "cut off";
      b.querySelector(".btn-resume").hidden = state !== "paused";
      lane._disc.setAttribute("class", "disc " + gclass(n.generation) + (state === "killed" ? " dead" : ""));

      // A truncation is shown in three phases: the doomed entries marked above the mark, removed, replaced.
      const anim = anims[id];
      let phase = null;
      if (anim) {
        const t = now - anim.t0;
        phase = t < CONFLICT_MS ? "conflict" : t < CONFLICT_MS + REMOVE_MS ? "removing" : t < CONFLICT_MS + REMOVE_MS + SLIDE_MS ? "slide" : null;
        if (!phase) delete anims[id];
      }
      const doomed = phase === "conflict" || phase === "removing";
      // While the doomed entries show, so does the mark they were above: they must never look committed.
      const hwm = doomed ? Math.min(anim.hwm, anim.from - 1) : n.hwm;
      const want = new Map();
      if (W.start > 1) want.set("older", { cls: "cell collapsed", x: 0, html: T.older(W.start - 1), title: T.olderTitle(W.start - 1) });
      for (const c of n.log) {
        const [i, g, p] = c;
        if (i < W.start || i > W.last) continue;
        if (doomed && i >= anim.from) continue;
        const above = i > hwm;
        want.set("c" + i + ":" + g + ":" + p, {
          cls: `cell ${gclass(g)}${above ? " uncommitted" : ""}${phase === "slide" && i >= anim.from ? " slide-in" : ""}`,
          x: W.x(i), html: [String(i), String(p), g === null ? "" : "g" + g], title: T.cellTitle(id, i, p, g, above, hwm) });
      }
      if (doomed) {
        for (const [i, g, p] of anim.removed) {
          if (i < W.start || i > W.last) continue;
          want.set("x" + i, { cls: `cell ${gclass(g)} uncommitted conflict${phase === "removing" ? " removing" : ""}`, x: W.x(i),
            html: [String(i), String(p), "g" + g], title: T.doomedTitle(id, i) });
        }
      }
      syncCells(lane, want);
      const extras = new Map();
      const hx = W.x(hwm + 1) - 4;  // in the gap between the last entry at or below the mark and the next
      extras.set("x-hwm", { cls: "mark", x: hx, title: T.hwmTitle(id, hwm) });
      // The tag sits left of its bar, or right of it when the bar is at the lane's left edge.
      const tagRight = hx < geo.em * 3;
      extras.set("x-hwm-text", { cls: "mark-label" + (tagRight ? " right" : ""), x: hx, text: T.hwmTag(hwm) });
      const end = doomed ? Math.max(n.log_end, anim.from + anim.removed.length - 1) : n.log_end;
      if (end > hwm && state !== "killed") {
        const aboveW = textWidth(T.above, 0.7, 0, "above-label"), tagW = textWidth(T.hwmTag(hwm), 0.7, 0, "mark-label");
        let ax = hx + 8 + (tagRight ? tagW + 4 : 0);
        if (ax + aboveW > geo.trackW - 2) ax = Math.max(0, hx - tagW - aboveW - 10);  // no room right: left of its tag
        extras.set("above", { cls: "above-label", x: ax, text: T.above });
      }
      if (leader && leader.id !== id && leader.match_index && leader.match_index[id] !== undefined) {
        const m = leader.match_index[id], nx = leader.next_index ? leader.next_index[id] : undefined;
        if (m >= W.start - 1) extras.set("match", { cls: "index-marker", x: Math.max(0, W.x(Math.max(m, 1)) + (m ? 2 : -4)), text: T.matchMark(m), title: T.matchTitle(leader.id, id, m) });
        if (nx !== undefined && nx >= W.start && nx <= W.last + 1) extras.set("next", { cls: "index-marker", x: W.x(nx) + 2, text: T.nextMark(nx), title: T.nextTitle(leader.id, id, nx) });
        const gap = geo.em * 3.6;
        if (extras.has("match") && extras.has("next") && Math.abs(extras.get("match").x - extras.get("next").x) < gap) extras.get("next").x = extras.get("match").x + gap;
      }
      // The leader's mark crosses every lane, except one showing doomed entries: left of that line means
      // committed, and they never were.
      if (leader && !doomed) extras.set("lline", { cls: "leader-line", x: W.x(leader.hwm + 1) - 4 });
      if (doomed) {
        const said = T.truncating(anim.from, anim.gen, anim.reason);
        if (wrap.classList.contains("compact")) {  // in the tags' row: short, right of the HWM tag, never over it
          const tagW = textWidth(T.hwmTag(hwm), 0.7, 0, "mark-label");
          extras.delete("above");
          extras.set("note", { cls: "conflict-note", x: hx + 8 + (tagRight ? tagW + 4 : 0), fit: true,
                               text: T.truncatingShort(anim.from), title: said });
        } else extras.set("note", { cls: "conflict-note", x: W.x(anim.from), fit: true, text: said });
      }
      syncExtras(lane, extras);
      lane._server.classList.toggle("selected", S.selected === id);
    }

    // A node's cut links, shortest first: "✂ A⇄B" for both ways, "✂ B→A" for one.
    function cutChips(id, cuts) {
      const key = (a, b) => a + ">" + b, has = new Set(cuts.map((l) => key(l.src, l.dst))), out = [];
      for (const l of cuts) {
        const other = l.src === id ? l.dst : l.src;
        if (has.has(key(id, other)) && has.has(key(other, id))) {
          if (l.src === id) out.push(T.cutBoth(id, other));
        } else out.push(T.cutChip(l.src, l.dst));
      }
      return out.join(" ");
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
        const at = spec.x + "px 0px";  // moved, not laid out again: the window slides every frame when busy
        if (node.style.translate !== at) node.style.translate = at;
        if (node.title !== spec.title) node.title = spec.title;
        spec.html.forEach((text, k) => { if (node.children[k].textContent !== text) node.children[k].textContent = text; });
        node.dataset.key = key;
      }
    }
    function syncExtras(lane, want) {
      const have = lane._extra;
      for (const [key, node] of have) if (!want.has(key)) { node.remove(); have.delete(key); }
      for (const [key, spec] of want) {
        let node = have.get(key);
        if (!node) { node = el("div", ""); lane._track.appendChild(node); have.set(key, node); }
        const cls = spec.cls + " " + key;
        if (node.className !== cls) node.className = cls;
        if (spec.text !== undefined && node.textContent !== spec.text) node.textContent = spec.text;
        // A long note (a longer language, large type) is pulled back left so that it ends inside its lane.
        const x = spec.fit ? Math.max(0, Math.min(spec.x, lane._track.clientWidth - node.offsetWidth)) : spec.x;
        const left = x + "px";
        if (node.style.left !== left) node.style.left = left;
        if (spec.title) node.title = spec.title;
      }
    }

    // ---- links: cut ones (one way: an arrow to the deaf node) and slow ones, as arcs in the gutter ----------
    function drawLinks() {
      linksSvg.replaceChildren();
      const links = S.cluster.links || [];
      if (!links.length || !geo) return;
      const defs = svg("defs");
      const head = svg("marker", { id: "cut-head", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 5, markerHeight: 5, orient: "auto-start-reverse" });
      head.appendChild(svg("path", { d: "M0,0 L10,5 L0,10 z", class: "cut-head" }));
      defs.appendChild(head); linksSvg.appendChild(defs);
      const order = ids();
      const cut = new Set(links.filter((l) => l.cut).map((l) => l.src + ">" + l.dst));
      const drawn = new Set();
      for (const l of links) {
        const a = geo.places[l.src], b = geo.places[l.dst];
        if (!a || !b) continue;
        const pair = [l.src, l.dst].sort().join("|");
        const both = l.cut && cut.has(l.dst + ">" + l.src);
        if (both && drawn.has(pair)) continue;
        drawn.add(pair);
        const span = Math.abs(order.indexOf(l.src) - order.indexOf(l.dst));
        const gx = a.gutterLeft + a.gutterW - 4;
        const bulge = Math.min(a.gutterW - 8, 10 + 7 * span);
        const y0 = a.mid, y1 = b.mid, ym = (y0 + y1) / 2;
        const kind = l.cut ? (both ? "cut both" : "cut one") : "slow";
        const g = svg("g", { class: "link " + kind, "data-src": l.src, "data-dst": l.dst });
        const path = svg("path", { d: `M${gx},${y0} Q${gx - 2 * bulge},${ym} ${gx},${y1}` });
        if (kind === "cut one") path.setAttribute("marker-end", "url(#cut-head)");
        g.appendChild(path);
        const label = svg("text", { x: gx - bulge, y: ym + 5 });
        label.textContent = l.cut ? "✂" : T.slowMark;
        g.appendChild(label);
        const title = svg("title");
        title.textContent = l.cut ? T.cutLink(l.src, l.dst, both) : T.slowLink(l.src, l.dst, Math.round(l.delay_ms));
        g.appendChild(title);
        linksSvg.appendChild(g);
      }
    }

    // ---- election timers: a ring round each server that fills as its clock runs ---------------------------
    function rings(now, force) {
      if (!force && now - lastRings < 40) return;  // 25 updates a second are plenty for a ring
      lastRings = now;
      const periodMs = 1000 / (S.frameHz || 10);
      for (const id of ids()) {
        const lane = laneEls.get(id), n = S.nodes[id];
        if (!lane || !n) continue;
        const c = S.clocks[id], state = n.state || "running";
        let frac = 0, cls = "ring", mark = "";
        lane._title.textContent = "";
        if (state === "killed") { mark = "✕"; cls += " off"; }
        else if (S.cluster.leader === id || n.role === "leader") { frac = 1; cls += " leads"; mark = "★"; lane._title.textContent = T.leadsTitle(id); }
        else if (c && c.timeout) {
          let ahead = 0;
          if (state === "running" && !c.held && c.tick_ms) ahead = Math.min((now - c.at) / c.tick_ms, c.running ? 1.5 * periodMs / c.tick_ms : 1);
          frac = Math.max(0, Math.min(1, (c.elapsed + ahead) / c.timeout));
          cls += frac > 0.85 ? " late" : frac > 0.6 ? " soon" : "";
          if (c.held || state === "paused") { cls += " held"; mark = state === "paused" ? "❚❚" : "❄"; }
          else if (n.role === "candidate") mark = "?";
          lane._title.textContent = T.timerTitle(id, c.elapsed, c.timeout, c.held);
        } else cls += " off";
        const dash = `${(frac * RING_C).toFixed(1)} ${RING_C.toFixed(1)}`;
        if (lane._ring.getAttribute("stroke-dasharray") !== dash) lane._ring.setAttribute("stroke-dasharray", dash);
        if (lane._ring.getAttribute("class") !== cls) lane._ring.setAttribute("class", cls);
        if (lane._mark.textContent !== mark) lane._mark.textContent = mark;
      }
    }
    // Only slow clocks are drawn running between two frames from the server (see rings): at full speed a
    // heartbeat resets them many times a frame, and the rings move with the frames.
    function ringsMoving() {
      if (S.mode !== "live") return false;
      return ids().some((id) => {
        const c = S.clocks[id], n = S.nodes[id];
        return c && n && c.running && !c.held && c.tick_ms >= 50 && n.state === "running" && n.role !== "leader";
      });
    }

    // ---- messages in flight ----------------------------------------------------------------------------
    // What a trace event sends, and where it travels: [from, to, kind, label, column, quiet].
    function messagesOf(e) {
      const M = T.msg, out = [];
      const endOf = (id) => ((S.nodes[id] || {}).log_end || 0) + 1;
      if (e.type === K.REPLICATION_SENT) {
        const hb = e.first > e.last;
        out.push([e.node, e.to, hb ? "heartbeat" : "request", hb ? M.heartbeat(e.hwm) : M.append(e.first, e.last), e.first, hb]);
      } else if (e.type === K.REPLICATION_RECEIVED) {
        const hb = e.first > e.last;
        out.push([e.node, e.from, "response", hb ? M.heartbeatAck : M.ack(e.last), hb ? e.first : e.last, hb]);
      } else if (e.type === K.REPLICATION_REJECTED) {
        out.push([e.node, e.from, "refusal", M.refuse(e.prev_index), e.prev_index, false]);
      } else if (e.type === K.ELECTION_STARTED) {
        for (const o of S.cluster.ids || []) if (o !== e.node) out.push([e.node, o, "vote", M.vote(e.generation), endOf(e.node), false]);
      } else if (e.type === K.VOTE_GRANTED || e.type === K.VOTE_DENIED) {
        out.push([e.node, e.candidate, "vote", e.type === K.VOTE_GRANTED ? M.voteYes : M.voteNo, endOf(e.candidate), false]);
      } else if (e.type === K.PREVOTE_STARTED) {
        for (const o of S.cluster.ids || []) if (o !== e.node) out.push([e.node, o, "vote", M.prevote(e.generation), endOf(e.node), false]);
      } else if (e.type === K.PREVOTE_GRANTED || e.type === K.PREVOTE_DENIED) {
        out.push([e.node, e.candidate, "vote", e.type === K.PREVOTE_GRANTED ? M.prevoteYes : M.prevoteNo, endOf(e.candidate), false]);
      } else if (e.type === K.EPOCH_QUERY) {
        out.push([e.node, (S.nodes[e.node] || {}).leader, "vote", M.epochQuery(e.generation), endOf(e.node), false]);
      }
      return out.filter((m) => m[1] && m[0] !== m[1]);
    }

    // `age` is how long ago (ms) the message left; `duration` how long it travels.
    function addFlights(e, age, duration) {
      if (!geo || duration < 100) return;
      const cut = new Set((S.cluster.links || []).filter((l) => l.cut).map((l) => l.src + ">" + l.dst));
      for (const [src, dst, kind, label, column, quiet] of messagesOf(e)) {
        if (quiet && !S.showHeartbeats) continue;
        const dur = linkDelay(src, dst, duration);
        if (age >= dur) continue;  // it has landed already
        flights.push({ src, dst, kind, label, column, quiet, gen: e.gen || 0, lost: cut.has(src + ">" + dst),
                       t0: performance.now() - age, dur, el: null });
      }
      if (flights.length > MAX_FLIGHTS) {
        const quietOnes = flights.filter((f) => f.quiet);
        const drop = new Set((quietOnes.length ? quietOnes : flights).slice(0, flights.length - MAX_FLIGHTS));
        for (const f of drop) if (f.el) f.el.remove();
        flights = flights.filter((f) => !drop.has(f));
      }
    }
    function linkDelay(src, dst, fallback) {
      if (S.mode !== "live") return fallback;
      const link = (S.cluster.links || []).find((l) => l.src === src && l.dst === dst && l.delay_ms !== undefined);
      return link && !link.cut ? Math.max(link.delay_ms, 100) : fallback;
    }

    function flightElement(f) {
      const g = svg("g", { class: `flight ${f.kind}${f.quiet ? " quiet" : ""}${f.lost ? " lost" : ""}` });
      g.dataset.src = f.src; g.dataset.dst = f.dst;
      const rect = svg("rect", { class: "pill " + gclass(f.gen), rx: 7, ry: 7 });
      const text = svg("text", { class: "msg", "text-anchor": "middle" });
      text.textContent = f.label;
      const title = svg("title"); title.textContent = T.dropTitle(f.src, f.dst, f.label);
      g.appendChild(rect); g.appendChild(text); g.appendChild(title);
      wires.appendChild(g);
      const size = parseFloat(getComputedStyle(text).fontSize) || 14;
      const w = text.getComputedTextLength() + size * 0.9, h = size * 1.55;
      rect.setAttribute("x", -w / 2); rect.setAttribute("y", -h / 2); rect.setAttribute("width", w); rect.setAttribute("height", h);
      text.setAttribute("y", size * 0.36);
      g.addEventListener("click", (ev) => { ev.stopPropagation(); hooks.drop(f); });
      return g;
    }

    function moveFlights(now) {
      if (!flights.length) return;
      const keep = [];
      for (const f of flights) {
        const a = geo && geo.places[f.src], b = geo && geo.places[f.dst];
        let p = (now - f.t0) / f.dur;
        const gone = f.dropped ? now - f.dropped > 500 : p >= 1;
        if (gone || !a || !b) { if (f.el) f.el.remove(); continue; }
        keep.push(f);
        if (!f.el) f.el = flightElement(f);
        const W = geo.W;
        const col = Math.max(W.start, Math.min(W.last, f.column || W.start));
        const shift = f.kind === "response" || f.kind === "refusal" ? 0.3 : -0.1;
        // Heartbeats keep to the column left free for them at the lanes' right, clear of every label.
        const x = f.quiet ? a.trackLeft + geo.trackW - geo.em * 3 + (f.kind === "response" ? 0 : -geo.em * 0.4)
          : a.trackLeft + W.x(col) + geo.cw * (0.5 + shift);
        let opacity = f.quiet ? 0.55 : 1, fall = 0;
        if (f.dropped) { p = f.droppedAt; const q = (now - f.dropped) / 500; opacity *= 1 - q; fall = 30 * q; }
        else if (f.lost && p > 0.5) { opacity *= Math.max(0, 1 - (p - 0.5) * 2.2); p = 0.5; if (!f.lostShown) { f.lostShown = true; f.el.querySelector("text").textContent = T.lost; } }
        const y = a.mid + (b.mid - a.mid) * p + fall;
        f.el.setAttribute("transform", `translate(${x.toFixed(1)},${y.toFixed(1)})`);
        f.el.setAttribute("opacity", opacity.toFixed(2));
      }
      flights = keep;
    }

    function dropFlight(f) {
      f.droppedAt = Math.min(1, (performance.now() - f.t0) / f.dur);
      f.dropped = performance.now();
      if (f.el) { f.el.classList.add("dropped"); f.el.querySelector("text").textContent = "✗ " + f.label; }
    }

    // ---- truncation -------------------------------------------------------------------------------------
    function startTruncation(e) {
      const before = S.nodes[e.node];
      const payloadAt = {};
      if (before) for (const c of before.log) payloadAt[c[0]] = c;
      const removed = (e.removed || []).map((r) => {
        const known = payloadAt[r[0]];
        return [r[0], r[1], known && known[1] === r[1] ? known[2] : "?"];
      });
      const hwm = e.hwm !== undefined && e.hwm !== null ? e.hwm : (before ? before.hwm : e.from_index - 1);
      anims[e.node] = { from: e.from_index, removed, hwm, t0: performance.now(), reason: e.reason, gen: e.conflicting_generation };
    }

    // ---- each animation frame: timers, messages, truncations in progress --------------------------------
    function animate(now) {
      rings(now, false);
      moveFlights(now);
      const running = Object.keys(anims);
      if (running.length && geo) {
        const leader = S.cluster.leader ? S.nodes[S.cluster.leader] : null;
        for (const id of running) if (S.nodes[id] && laneEls.has(id)) drawLane(laneEls.get(id), S.nodes[id], leader, now);
      }
      return flights.length > 0 || Object.keys(anims).length > 0 || ringsMoving();
    }

    return {
      render, animate, addFlights, startTruncation, dropFlight,
      clearFlights() { for (const f of flights) if (f.el) f.el.remove(); flights = []; },
      flightsShown: () => flights.length,
      lane: (id) => laneEls.get(id),
      gclass, color: (g) => COLORS[hue(g)], dark: (g) => DARK.has(hue(g)),
    };
  };
})();
