/* Where frames come from and where controls go: the dashboard's server over Socket.IO (and its drawings over
   HTTP), or the page's own file when it carries a whole replay (onefile.js, `hwm-lab replay DIR --html FILE`,
   sets window.HWM_SOURCE). A control is answered by the server; what an answer changes on the page (the guide,
   a step to play) is said by the modules that own it (answered). */
import { $, T, toast, token } from "hwm/page";
import { S } from "hwm/state";

const fetched = (url) => fetch(url).then((r) => (r.ok ? r.text() : Promise.reject(new Error(String(r.status)))));
export const source = window.HWM_SOURCE || { connect: (options) => io(options), sequence: fetched, history: fetched };

// A page's name for itself, kept across reloads, so that it answers the room's questions once: random, never the
// student's.
function seatOf() {
  try {
    let seat = localStorage.getItem("hwm-seat");
    if (!seat || !/^[A-Za-z0-9_-]{8,64}$/.test(seat)) {
      const bytes = new Uint8Array(12);
      crypto.getRandomValues(bytes);
      seat = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
      localStorage.setItem("hwm-seat", seat);
    }
    return seat;
  } catch (e) { return null; }  // private mode: the connection is the seat
}
const seat = seatOf();
export const socket = source.connect({ auth: { ...(token ? { token } : {}), lang: T.lang, ...(seat ? { seat } : {}) },
                                      query: token ? { token } : {} });

export function setConn(ok) {
  const c = $("#conn");
  c.textContent = ok ? (S.mode === "replay" ? T.replay : T.live) : T.disconnected;
  c.className = "pill " + (ok ? "ok" : "bad");
}
socket.on("connect", () => setConn(true));
socket.on("disconnect", () => setConn(false));
socket.on("connect_error", () => setConn(false));

const effects = [];  // what an answer does besides resolving: (answer) => void, in the order they were given
export function answered(effect) { effects.push(effect); }
export function control(action, args) {
  return new Promise((resolve) => {
    socket.emit("control", { action, args: args || {} }, (answer) => {
      if (!answer.ok && !answer.confirm && !["write", "read"].includes(action)) toast(answer.error || T.refusedControl, true);
      for (const effect of effects) effect(answer);
      resolve(answer);
    });
  });
}
window.hwmControl = control;
