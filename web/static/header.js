/* Above the stage: the header's summary of the cluster, the generations' legend, the banners (slow motion, held
   clocks) and the caption (a guided scenario's step, or a replay's). */
import { $, el, T } from "hwm/page";
import { clocksHeld, S, steps } from "hwm/state";
import { gclass } from "hwm/marks";

export function renderHeader() {
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

export function renderLegend() {
  const gens = new Set();
  for (const n of Object.values(S.nodes)) { for (const c of n.log) if (c[1] !== null) gens.add(c[1]); if (n.generation) gens.add(n.generation); }
  const list = [...gens].sort((a, b) => a - b);
  const key = list.join();
  const L = $("#legend");
  if (L.dataset.gens === key) return;
  L.dataset.gens = key;
  L.replaceChildren(el("span", "", T.legendGeneration));
  for (const g of list) {
    const s = el("span", ""); s.appendChild(el("span", "sw " + gclass(g)));
    s.appendChild(document.createTextNode(String(g))); L.appendChild(s);
  }
  const u = el("span", ""); u.appendChild(el("span", "sw uncommitted")); u.appendChild(document.createTextNode(T.legendAbove)); L.appendChild(u);
  const r = el("span", ""); r.appendChild(el("span", "sw ring")); r.appendChild(document.createTextNode(T.legendTimer)); L.appendChild(r);
  L.appendChild(el("span", "", T.legendMarks));
}

export function renderBanners() {
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

export function renderCaption() {
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
