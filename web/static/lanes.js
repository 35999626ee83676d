/* A node's lane on the stage: its server disc (the election timer's ring round it), its details and buttons, its
   log as cells in the window of indexes the stage measured, its high-water mark and the leader's, the leader's
   match and next index for it, and a truncation shown in three phases. Drawn from the state; the stage (stage.js)
   lays the lanes out and hands each part the shared context (the state, the hooks, the measured layout). */
import { el, T } from "hwm/page";
import { CONFLICT_MS, gclass, REMOVE_MS, RING_C, RING_R, SLIDE_MS, svg } from "hwm/marks";

export function makeLanes(ctx) {
  const { S, hooks, laneEls, anims, wrap, textWidth } = ctx;

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

  function drawLane(lane, n, leader, now) {
    const id = n.id, W = ctx.geo.W, cw = ctx.geo.cw;
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
    const tagRight = hx < ctx.geo.em * 3;
    extras.set("x-hwm-text", { cls: "mark-label" + (tagRight ? " right" : ""), x: hx, text: T.hwmTag(hwm) });
    const end = doomed ? Math.max(n.log_end, anim.from + anim.removed.length - 1) : n.log_end;
    if (end > hwm && state !== "killed") {
      const aboveW = textWidth(T.above, 0.7, 0, "above-label"), tagW = textWidth(T.hwmTag(hwm), 0.7, 0, "mark-label");
      let ax = hx + 8 + (tagRight ? tagW + 4 : 0);
      if (ax + aboveW > ctx.geo.trackW - 2) ax = Math.max(0, hx - tagW - aboveW - 10);  // no room right: left of its tag
      extras.set("above", { cls: "above-label", x: ax, text: T.above });
    }
    if (leader && leader.id !== id && leader.match_index && leader.match_index[id] !== undefined) {
      const m = leader.match_index[id], nx = leader.next_index ? leader.next_index[id] : undefined;
      if (m >= W.start - 1) extras.set("match", { cls: "index-marker", x: Math.max(0, W.x(Math.max(m, 1)) + (m ? 2 : -4)), text: T.matchMark(m), title: T.matchTitle(leader.id, id, m) });
      if (nx !== undefined && nx >= W.start && nx <= W.last + 1) extras.set("next", { cls: "index-marker", x: W.x(nx) + 2, text: T.nextMark(nx), title: T.nextTitle(leader.id, id, nx) });
      const gap = ctx.geo.em * 3.6;
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

  return { laneFor, drawLane };
}
