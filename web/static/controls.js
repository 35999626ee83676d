/* The controls panel: the nodes' buttons and the settings (Cluster tab), a client's writes and reads (Client
   tab), the links' table (Network tab), and which of them this page may use (only a page with the token acts;
   a replay acts on nothing but the replay). Each sends a control over the socket (socket.js). */
import { $, el, T, toast, token } from "hwm/page";
import { clocksHeld, S } from "hwm/state";
import { control } from "hwm/socket";
import { renderGuideButtons } from "hwm/guide";

function showAnswer(text, refused) {
  const box = $("#answers");
  box.prepend(el("div", "answer" + (refused ? " refused" : ""), text));
  while (box.children.length > 5) box.lastChild.remove();
}

export function applyRights() {
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
$("#btn-read-ask").addEventListener("click", () => {
  control("question_ask", { index: Number($("#read-index").value), node: $("#read-node").value });
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

export function nodeAction(id, action) { return control(action, { node: id }); }
export function isolate(id) {
  for (const o of S.cluster.ids) if (o !== id) control("cut", { src: id, dst: o, one_way: false });
}
export function toggleClocks() {
  const hold = !clocksHeld();
  control("clocks", { hold }).then((a) => { if (a.ok) toast(hold ? T.clocksHeld : T.clocksReleased); });
}

export function renderNodeButtons() {
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

export function renderLinks() {
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

export function renderSelects() {
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
