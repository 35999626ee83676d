/* The explorer's panel (web/explorer.py computes everything; this page only draws it): where the run stands,
   each rule's status there, every choice enabled there as a button, and saving the run as a script. The stage
   is the replay's own: the server sends the frame of the state shown. Every sentence comes from text.js. */
import { $, el, T } from "hwm/page";

export function HWMExplore(S, hooks) {
  let view = null;

  function send(message) {
    hooks.emit("explore", message, (a) => {
      if (!a.ok) hooks.toast(a.error, true);
      else if (a.explore) { view = a.explore; render(); }
    });
  }

  // The state shown: after how many steps of the replay's, from the replay's cursor.
  function stepAtCursor() {
    const list = (S.replay && S.replay.steps) || [];
    return list.filter((s) => s.n <= S.position).length;
  }

  function render() {
    $("#tab-btn-explore").hidden = !view;
    $("#btn-explore-here").hidden = !(S.replay && S.replay.explorable) || !!view;
    if (!view) return;
    $("#explore-at").textContent = T.exploreAt(view.at, view.total);
    $("#btn-explore-back").disabled = !S.canControl || view.at === 0;
    $("#btn-explore-on").disabled = !S.canControl || view.at === view.total;
    const rules = $("#explore-rules");
    rules.replaceChildren();
    for (const r of view.rules) {
      const li = el("li", r.broken ? "broken" : r.checked ? "holds" : "muted");
      li.dataset.check = r.check;
      li.append(el("span", "rule-status", r.broken ? T.ruleBroken : r.checked ? T.ruleHolds : T.ruleNotChecked),
                " ", el("span", "", r.title));
      if (r.broken) li.append(el("div", "small", r.broken));
      rules.appendChild(li);
    }
    const choices = $("#explore-choices");
    choices.replaceChildren();
    if (!view.choices.length) choices.appendChild(el("li", "muted small", T.exploreNoChoice));
    for (const c of view.choices) {
      const b = el("button", "choice", c.label);
      b.type = "button";
      b.title = c.words.join(" ");
      b.dataset.words = c.words.join(" ");
      b.disabled = !S.canControl;
      b.addEventListener("click", () => send({ action: "take", words: c.words }));
      const li = el("li");
      li.appendChild(b);
      choices.appendChild(li);
    }
    $("#btn-explore-save").disabled = !S.canControl;
    $("#explore-saved").textContent = view.saved ? T.exploreSaved(view.saved) : "";
  }

  $("#btn-explore-back").addEventListener("click", () => view && send({ action: "go", at: view.at - 1 }));
  $("#btn-explore-on").addEventListener("click", () => view && send({ action: "go", at: view.at + 1 }));
  $("#btn-explore-save").addEventListener("click", () => send({ action: "save" }));
  $("#btn-explore-here").addEventListener("click", () => {
    send({ action: "open", dir: S.replay.run_dir, at: stepAtCursor() });
    hooks.showTab("explore");
  });

  return {
    hello(h) {  // every hello says whether a counterexample is being explored, and where
      const opened = !view && h.explore;
      view = h.explore || null;
      render();
      if (opened) hooks.showTab("explore");
    },
  };
}
