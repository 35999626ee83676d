/* HWM Lab dashboard page, its entry module: takes what the server says on connecting (hello) and the room's
   questions, and draws the page at most once per animation frame from the state the other modules keep. Plain
   ES modules, no build step: each page maps the modules' names (hwm/...) to their files with an import map
   (templates/index.html; a replay in one file: static/onefile.js). Every sentence comes from text.js.
     page, state        what every module reads: the sentences, the DOM helpers; the state S and the drawing
     socket             the connection (or a one-file replay's source) and the controls sent over it
     guide, room        a guided scenario; the room's language and following the instructor
     panels, feed       tabs, help, large type, panels; the event feed
     controls, header   the controls panel and its rights; the summary, legend, banners, caption
     board, frames      the stage wired to the controls; what a frame does to the state, and the replay's seeks
     views, replay      the sequence and history views; the replay's timeline
     keys               the keyboard
   The stage (stage.js, with marks.js, lanes.js, flights.js) draws the lanes; question.js the question put to the
   room; explore.js the explorer's panel. */
import { $, T, toast } from "hwm/page";
import { drawWith, redraw, S, schedule, stats } from "hwm/state";
import { control, setConn, socket } from "hwm/socket";
import { renderGuide, renderScenarios } from "hwm/guide";
import { followRoomLanguage, renderFollow } from "hwm/room";
import { showTab } from "hwm/panels";
import { renderFeed } from "hwm/feed";
import { applyRights, renderLinks, renderNodeButtons, renderSelects } from "hwm/controls";
import { renderBanners, renderCaption, renderHeader, renderLegend } from "hwm/header";
import { stage } from "hwm/board";
import { stopPlaying } from "hwm/frames";
import { renderView } from "hwm/views";
import { renderMarkers, renderTimeline } from "hwm/replay";
import "hwm/keys";
import { HWMQuestion } from "hwm/question";
import { HWMExplore } from "hwm/explore";

const question = HWMQuestion(S, {
  answer: (id, choice) => answerQuestion(id, choice),
  control: (action, args) => control(action, args),
});
const explorer = HWMExplore(S, {
  emit: (event, message, done) => socket.emit(event, message, done),
  toast: (text, bad) => toast(text, bad),
  showTab: (name) => showTab(name),
});

socket.on("hello", onHello);
socket.on("question", (q) => {
  S.question = q;
  if (!q || (S.myAnswer && S.myAnswer.id !== q.id)) S.myAnswer = null;
  renderGuide(); redraw();
});
socket.on("question_count", (c) => {
  if (S.question && c && c.id === S.question.id && S.question.count !== c.count) {
    S.question = { ...S.question, count: c.count }; redraw();
  }
});
function answerQuestion(id, choice) {
  socket.emit("answer", { id, choice }, (a) => {
    if (a && a.ok) { S.myAnswer = { id: a.id, choice: a.choice }; redraw(); }
    else toast((a && a.error) || T.refusedControl, true);
  });
}

function onHello(h) {
  S.mode = h.mode; S.canControl = h.can_control; S.tokenRequired = h.token_required; S.follow = !!h.follow;
  S.ownsCluster = h.owns_cluster; S.scenarios = h.scenarios || []; S.liveAvailable = h.live_available;
  S.frameHz = h.frame_hz || 10;
  S.roomLang = h.room_lang;
  if (followRoomLanguage(h.room_lang)) return;
  if (h.guide) S.guide = h.guide;
  S.question = h.question || null;
  S.myAnswer = h.question && h.answered !== null && h.answered !== undefined ? { id: h.question.id, choice: h.answered } : null;
  S.replay = h.replay; S.seq = null; S.clocks = {};
  if (h.mode !== "replay") stopPlaying();
  stage.clearFlights();
  document.body.dataset.mode = h.mode;
  document.body.classList.toggle("watcher", !S.canControl);
  $("#viewer").hidden = S.canControl;
  $("#timeline").hidden = h.mode !== "replay";
  renderFollow();
  setConn(true);
  if (h.replay) {
    const r = h.replay;
    S.total = r.events; S.duration = r.duration;
    $("#replay-info").textContent = T.replayInfo(r.run_dir, r.meta.run || "", r.meta.source || "?", r.events,
                                                 r.duration, r.warnings.length);
    $("#replay-dir").value = r.run_dir;
    renderMarkers();
  }
  renderScenarios();
  $("#start-note").textContent = S.ownsCluster ? "" : T.attached;
  renderGuide(); applyRights();
  explorer.hello(h);
  redraw();
}

// ---- drawing -----------------------------------------------------------------------------------------
function draw() {
  const started = performance.now();
  if (S.dirty) { S.dirty = false; renderAll(started); }
  const moving = stage.animate(started);
  if (stats.record) {  // the frame's style and layout are counted too: read a size to have them done now
    void document.body.offsetHeight;
    stats.drawMs.push(performance.now() - started);
    stats.flights = Math.max(stats.flights, stage.flightsShown());
  }
  if (moving) schedule();
}
drawWith(draw);

function renderAll(now) {
  renderHeader(); renderLegend(); renderBanners(); renderCaption(); question.render();
  renderView(now);
  renderFeed(S.feedFull); S.feedFull = false;
  renderNodeButtons(); renderLinks(); renderSelects(); renderTimeline();
  const rights = [S.canControl, S.mode, S.ownsCluster, S.liveAvailable, (S.cluster.ids || []).join()].join();
  if (rights !== S.rightsShown) { S.rightsShown = rights; applyRights(); }  // new buttons appear with new nodes
}

schedule();
