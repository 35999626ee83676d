/* Messages in flight: what each trace event sends, travelling from lane to lane in the column of the entries it
   carries (heartbeats in their own column at the lanes' right), lost on a cut link, dropped when clicked. */
import { KINDS as K, T } from "hwm/page";
import { gclass, svg } from "hwm/marks";

const MAX_FLIGHTS = 80;     // beyond this, the oldest quiet messages make room

export function makeFlights(ctx) {
  const { S, hooks, wires } = ctx;
  let flights = [];

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
    if (!ctx.geo || duration < 100) return;
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
      const a = ctx.geo && ctx.geo.places[f.src], b = ctx.geo && ctx.geo.places[f.dst];
      let p = (now - f.t0) / f.dur;
      const gone = f.dropped ? now - f.dropped > 500 : p >= 1;
      if (gone || !a || !b) { if (f.el) f.el.remove(); continue; }
      keep.push(f);
      if (!f.el) f.el = flightElement(f);
      const W = ctx.geo.W;
      const col = Math.max(W.start, Math.min(W.last, f.column || W.start));
      const shift = f.kind === "response" || f.kind === "refusal" ? 0.3 : -0.1;
      // Heartbeats keep to the column left free for them at the lanes' right, clear of every label.
      const x = f.quiet ? a.trackLeft + ctx.geo.trackW - ctx.geo.em * 3 + (f.kind === "response" ? 0 : -ctx.geo.em * 0.4)
        : a.trackLeft + W.x(col) + ctx.geo.cw * (0.5 + shift);
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

  function clearFlights() { for (const f of flights) if (f.el) f.el.remove(); flights = []; }
  return { addFlights, moveFlights, dropFlight, clearFlights, count: () => flights.length };
}
