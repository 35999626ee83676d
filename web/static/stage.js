/* The stage: one lane per node (its server disc with the election timer, its log as cells, its high-water
   mark), the leader's mark across the lanes, cut and slow links in the gutter, and messages travelling from
   lane to lane in the column of the entries they carry. It draws the page's state S and owns nothing else.
   Plain DOM and SVG; geometry is measured once per layout, so that an animation frame only moves things. Its parts:
   lanes.js draws a lane, flights.js the messages in flight, marks.js holds the colours they share. */
import { el, T } from "hwm/page";
import { color, dark, gclass, RING_C, svg } from "hwm/marks";
import { makeLanes } from "hwm/lanes";
import { makeFlights } from "hwm/flights";

const MIN_SLOTS = 6;        // a lane shows at least this many entries before cells shrink
const ROOMY_PX = 120;       // a lane this tall holds a cell of three 18 px lines, and four lines of node details
const SNUG_PX = 70;         // large type in a shorter lane (a question on the stage): a cell of two 18 px lines
                            // (index and generation side by side over the payload), three lines of node details
const SNUG_CELL = 46;       // the height of such a cell

export function makeStage(S, hooks) {
  const lanesBox = document.getElementById("lanes"), wrap = document.getElementById("lanes-wrap");
  const wires = document.getElementById("wires"), linksSvg = document.getElementById("links-svg");
  const hwmLine = document.getElementById("hwm-line");
  const laneEls = new Map();
  let geo = null;             // measured layout: window of indexes, cell size, each lane's place
  const anims = {};           // node -> truncation being shown
  let lastRings = 0;
  // what the parts share (the measured layout changes: read it as ctx.geo)
  const ctx = { S, hooks, laneEls, anims, wrap, wires, textWidth, get geo() { return geo; } };
  const { laneFor, drawLane } = makeLanes(ctx);
  const { addFlights, moveFlights, dropFlight, clearFlights, count } = makeFlights(ctx);

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
    return count() > 0 || Object.keys(anims).length > 0 || ringsMoving();
  }

  return {
    render, animate, addFlights, startTruncation, dropFlight, clearFlights,
    flightsShown: count,
    lane: (id) => laneEls.get(id),
    gclass, color, dark,
  };
}
