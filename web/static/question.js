/* The question put to the room, on every page's stage: its prompt and choices; on a student's page the choices are
   buttons (one answer, changed at will until the question closes); on the projector the count as it grows, and the
   buttons that close it (the step then plays) and take it away. After the reveal: how many chose each choice,
   the right one marked, and why. The server never sends who answered what, nor the right choice before the
   reveal. Every sentence comes from text.js. */
import { el, T } from "hwm/page";

export function HWMQuestion(S, hooks) {
  const box = document.getElementById("question");
  let shownKey = null;

  // The projector (a page with the token, when a token is needed) asks and closes; every other page answers.
  function answers() { return !(S.canControl && S.tokenRequired); }

  function render() {
    const q = S.question;
    const mine = q && S.myAnswer && S.myAnswer.id === q.id ? S.myAnswer.choice : null;
    // The count changes a few times a second while the room answers: it is written in place, so that the
    // choices are not built again under a student's finger (a click on a button just replaced is lost).
    const key = JSON.stringify([q && { ...q, count: null }, mine, S.canControl, S.tokenRequired]);
    if (key === shownKey) {
      const count = document.getElementById("q-count");
      if (q && count && count.textContent !== T.qAnswers(q.count)) count.textContent = T.qAnswers(q.count);
      return false;
    }
    shownKey = key;
    box.hidden = !q;
    document.body.classList.toggle("asking", !!q);
    if (!q) { box.replaceChildren(); return true; }
    box.dataset.state = q.state;
    box.dataset.id = String(q.id);
    const head = el("div", "q-head");
    head.appendChild(el("span", "q-prompt", q.prompt));
    const count = el("span", "q-count", T.qAnswers(q.count));
    count.id = "q-count";
    head.appendChild(count);
    const list = el("div", "q-choices");
    list.id = "q-choices";
    const total = q.counts ? q.counts.reduce((a, b) => a + b, 0) : 0;
    q.choices.forEach((label, k) => list.appendChild(choice(q, label, k, mine, total)));
    const parts = [head, list];
    if (q.state === "open" && answers()) parts.push(el("div", "q-note", mine === null ? T.qChoose : T.qChange));
    if (q.state === "closed") parts.push(el("div", "q-note", T.qClosed));
    if (q.state === "revealed") {
      const why = el("div", "q-why", q.why); why.id = "q-why"; parts.push(why);
      if (q.stage) { const s = el("div", "q-stage", q.stage); s.id = "q-stage"; parts.push(s); }
    }
    if (S.canControl) parts.push(buttons(q));
    box.replaceChildren(...parts);
    return true;
  }

  function choice(q, label, k, mine, total) {
    const revealed = q.state === "revealed";
    const canAnswer = q.state === "open" && answers();
    const b = el(canAnswer ? "button" : "div", "q-choice" + (mine === k ? " mine" : "") +
                 (revealed && k === q.right ? " right" : ""));
    b.dataset.choice = String(k);
    if (canAnswer) { b.type = "button"; b.addEventListener("click", () => hooks.answer(q.id, k)); }
    b.appendChild(el("span", "q-label", label));
    if (mine === k) b.appendChild(el("span", "q-mine", T.qMine));
    if (revealed) {
      const n = q.counts[k];
      const bar = el("span", "q-bar");
      bar.style.width = (total ? Math.round(100 * n / total) : 0) + "%";
      b.appendChild(bar);
      b.appendChild(el("span", "q-n", String(n)));
      if (k === q.right) b.appendChild(el("span", "q-right", T.qRight));
    }
    return b;
  }

  function buttons(q) {
    const row = el("div", "row q-buttons");
    if (q.state === "open") {
      const close = el("button", "", q.source && q.source.live ? T.qCloseRead : T.qClose);
      close.type = "button"; close.id = "btn-q-close";
      close.addEventListener("click", () => hooks.control("question_close"));
      row.appendChild(close);
    }
    const dismiss = el("button", "", T.qDismiss);
    dismiss.type = "button"; dismiss.id = "btn-q-dismiss";
    dismiss.addEventListener("click", () => hooks.control("question_dismiss"));
    row.appendChild(dismiss);
    return row;
  }

  return { render };
}
