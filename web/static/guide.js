/* A guided scenario (lab/sim/scenarios): the Guide tab's choice of scenario (the instructor is asked first when
   it would replace what the room built), its progress and outcomes, the questions the room may be asked before
   the next step, and Next / Back. The server runs the steps and sends the guide's state. */
import { $, el, T } from "hwm/page";
import { redraw, S } from "hwm/state";
import { answered, control, socket } from "hwm/socket";

socket.on("guide", (g) => { S.guide = g; renderGuide(); redraw(); });
answered((answer) => { if (answer.guide) { S.guide = answer.guide; renderGuide(); redraw(); } });

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
$("#btn-next").addEventListener("click", () => control("guide_next"));
$("#btn-back").addEventListener("click", () => control("guide_back"));

export function renderScenarios() {
  const sel = $("#guide-scenario");
  sel.replaceChildren();
  for (const s of S.scenarios) {
    const o = el("option", "", `${s.name.toUpperCase()}: ${s.title.replace(/^\S+\s+-\s+/, "")}`);
    o.value = s.name; sel.appendChild(o);
  }
}

export function renderGuide() {
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
export function renderGuideButtons() {
  const g = S.guide, can = S.canControl && g && g.active && !g.busy && S.mode === "live";
  $("#btn-next").disabled = !(can && g.done < g.total);
  $("#btn-back").disabled = !(can && g.done > 0);
}
