/* A replay carried whole in the page's own file (`hwm-lab replay DIR --html FILE`, web/onefile.py). The file holds
   two parts, each JSON, gzip and base64: the page (the dashboard's style sheet, its markup and catalogue in every
   language, its scripts) and the run. This script unpacks the page in the reader's language (?lang=, else the
   browser's, else English), then runs the dashboard's scripts (its ES modules from data: URLs), for which it stands
   in for the dashboard's server: the page (socket.js) asks it for frames as it would ask over Socket.IO, and it
   answers with the frames the server built ahead. The sequence view is the server's drawing of every event, cut at the replay's cursor here.
   Nothing is fetched. */
(function () {
  "use strict";
  async function unpack(id) {
    const text = document.getElementById(id).textContent.trim();
    const bytes = Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return JSON.parse(await new Response(stream).text());
  }
  const ready = unpack("hwm-run");
  const asked = new URLSearchParams(location.search).get("lang");
  let lang = "en";

  function show(page) {
    const has = (code) => Object.prototype.hasOwnProperty.call(page.views, code);
    const supported = (l) => {
      const code = String(l || "").toLowerCase().split(/[-_.@]/)[0];
      return has(code) ? code : null;
    };
    const chosen = supported(asked);
    lang = chosen || (navigator.languages || [navigator.language]).map(supported).find(Boolean) || "en";
    const view = page.views[lang], style = document.createElement("style");
    style.textContent = page.css;
    document.head.appendChild(style);
    document.body.insertAdjacentHTML("afterbegin", view.body);
    document.documentElement.lang = view.tag;
    document.title = view.title;
    window.HWM_I18N = { ...view.i18n, chosen };
    window.HWM_KINDS = page.kinds;
    window.HWM_SOURCE = { connect, sequence, history, ready };
    run(page.scripts, page.modules);
  }
  // The dashboard's own scripts (web/scripts.py): text.js, then its modules, each named in an import map by a data:
  // URL of its text (modules import each other by name: a name resolves through the map, in a data: URL too).
  function run([text, ...code], modules) {
    const classic = document.createElement("script");
    classic.textContent = text;
    document.body.appendChild(classic);
    const imports = {};
    modules.names.forEach((name, k) => {
      imports[name] = "data:text/javascript;charset=utf-8," + encodeURIComponent(code[k]);
    });
    const map = document.createElement("script");
    map.type = "importmap";
    map.textContent = JSON.stringify({ imports });
    document.head.appendChild(map);
    const entry = document.createElement("script");
    entry.type = "module";
    entry.textContent = `import ${JSON.stringify(modules.entry)};`;
    document.body.appendChild(entry);
  }
  unpack("hwm-page").then(show, () => { document.getElementById("hwm-unpacked").hidden = false; });

  // ---- frames, as web.frames.replay_frame makes them ------------------------------------------------------
  let shown = 0;  // the frame last answered: a step on or back moves to the next frame the file holds
  function frameAt(run, k) {
    const [position, time, play, cluster, nodes, skipped] = run.frames[k];
    const byType = run.skipped[skipped];
    // frames[0] is the start; frames[k] shows the file's events up to its k-th
    const events = [];
    for (let i = Math.max(0, k - run.recent); i < k; i++) events.push({ ...run.events[i], text: run.texts[lang][i] });
    shown = k;
    // the step under way and its narration, as the server's frame says them (the file holds every step's)
    const steps = run.info[lang].steps || [];
    let now = -1;
    steps.forEach((s, i) => { if (s.start <= position) now = i; });
    const stepNow = now >= 0 ? { step_now: { k: now + 1, text: steps[now].text } } : {};
    return { ...run.base, ...stepNow, seq: position, sent: Date.now() / 1000, position, time, play, events_next: position + 1,
             nodes: nodes.map((i) => (run.exit_reasons[lang][i]  // a node's reason for stopping, in the page's language
               ? { ...run.nodes[i], exit_reason: run.exit_reasons[lang][i] } : run.nodes[i])),
             cluster: run.clusters[cluster], events,
             skipped: Object.values(byType).reduce((a, b) => a + b, 0), skipped_by_type: byType };
  }
  function lastAtMost(run, test) {  // the last frame that passes `test` (frames are in order), else the first
    let lo = 0, hi = run.frames.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (test(run.frames[mid])) lo = mid; else hi = mid - 1;
    }
    return lo;
  }
  function seek(run, want) {
    if (want && want.time !== undefined && want.time !== null) {
      return frameAt(run, lastAtMost(run, (f) => f[2] <= Number(want.time)));
    }
    const position = Math.max(0, Number(want && want.position) || 0);
    let k = lastAtMost(run, (f) => f[0] <= position);
    const now = run.frames[shown][0];
    if (position > now && run.frames[k][0] < position && k + 1 < run.frames.length) k += 1;  // on: the next one held
    return frameAt(run, k);
  }

  // ---- the page's Socket.IO, answered from the file -------------------------------------------------------
  function hello(run) {
    return { mode: "replay", live_available: false, can_control: false, token_required: false, follow: false,
             room_lang: null, frame_hz: 10, owns_cluster: false, scenarios: [], guide: null, replay: run.info[lang] };
  }
  function answer(run, name, payload) {
    if (name === "replay_seek") return seek(run, payload);
    if (name === "follow") return { ok: true, follow: false, mode: "replay" };
    if (name === "resync") return null;
    return { ok: false, error: window.HWM_TEXT.oneFileOnly };
  }
  function describe(run) {  // the run's name where the controls would be, and how much of it the file shows
    const info = run.info[lang], line = document.createElement("span");
    line.id = "onefile-run"; line.className = "summary muted";
    line.textContent = window.HWM_TEXT.oneFileRun(info.meta.run || info.run_dir, info.shown, info.events);
    document.getElementById("conn").after(line);
  }
  function connect() {
    const handlers = {};
    const fire = (name, value) => (handlers[name] || []).forEach((fn) => fn(value));
    ready.then((run) => { describe(run); fire("connect"); fire("hello", hello(run)); fire("frame", frameAt(run, 0)); },
               (error) => { fire("connect_error", error); document.body.dataset.broken = String(error); });
    return {
      on(name, fn) { (handlers[name] = handlers[name] || []).push(fn); return this; },
      emit(name, payload, callback) {
        ready.then((run) => { const a = answer(run, name, payload); if (callback) callback(a); });
      },
    };
  }

  // ---- the sequence view: the server's drawing of every event, cut at the cursor --------------------------
  // Each element says its event's number and row (lab/i18n/sequence.py, cursor=True): the elements after the
  // cursor are hidden, an arrow that lands after it is drawn in flight, and the picture ends at its last row.
  const drawings = {};
  function drawing(run, heartbeats) {
    const key = heartbeats ? "heartbeats" : "plain";
    if (!drawings[key]) {
      drawings[key] = new DOMParser().parseFromString(run.sequence[lang][key], "image/svg+xml").documentElement;
    }
    return drawings[key];
  }
  function cut(svg, position) {
    const top = Number(svg.dataset.top), rowH = Number(svg.dataset.rowH);
    const y = (row) => top + rowH * row;
    let rows = 0;
    for (const e of svg.querySelectorAll("[data-n]")) {
      const on = Number(e.dataset.n) <= position && !(e.dataset.gone && Number(e.dataset.gone) <= position);
      e.setAttribute("display", on ? "inline" : "none");
      if (!on) continue;
      rows = Math.max(rows, Number(e.dataset.row) || 0);
      if (e.dataset.until && Number(e.dataset.until) <= position) rows = Math.max(rows, Number(e.dataset.rowTo));
      if (e.dataset.arrive) flying(e, Number(e.dataset.arrive) > position);
    }
    for (const e of svg.querySelectorAll("line.down[data-n]")) {  // a node still down at the cursor: to the end
      if (!e.dataset.y2) e.dataset.y2 = e.getAttribute("y2");
      const up = e.dataset.until && Number(e.dataset.until) <= position;
      e.setAttribute("y2", up ? e.dataset.y2 : String(y(rows + 1)));
    }
    const height = y(rows + 2) + 24, width = svg.getAttribute("width");
    svg.setAttribute("height", String(height));
    svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
    svg.querySelector("rect").setAttribute("height", String(height));
    for (const e of svg.querySelectorAll(".node .life")) e.setAttribute("y2", String(height - 30));
    for (const e of svg.querySelectorAll(".node .foot")) e.setAttribute("y", String(height - 8));
  }
  function flying(g, on) {  // an arrow before it lands: short, dashed, its label half way
    const line = g.querySelector("line"), label = g.querySelector("text");
    if (!g.dataset.landed) g.dataset.landed = [line.getAttribute("y2"), label ? label.getAttribute("y") : "",
                                               line.getAttribute("stroke-dasharray") || ""].join("|");
    const [y2, ly, dash] = g.dataset.landed.split("|"), [fy2, fly] = g.dataset.fly.split(" ");
    line.setAttribute("y2", on ? fy2 : y2);
    if (label) label.setAttribute("y", on ? fly : ly);
    if (on || dash) line.setAttribute("stroke-dasharray", on ? "5 3" : dash);
    else line.removeAttribute("stroke-dasharray");
    g.classList.toggle("flying", on);
  }
  // The drawing's lines spread over the width the page asks for, as the server spreads them (lab/i18n/sequence.py:
  // each column as wide as the width allows, never narrower than drawn): every x right of the names' margin moves
  // with its column; a label box keeps its width around its centre.
  function spread(svg, width) {
    const left = Number(svg.dataset.left), col = Number(svg.dataset.colW);
    const nodes = svg.querySelectorAll(".node").length || 1;
    const wanted = Math.max(col, Math.floor((width - left) / nodes));
    const k = wanted / (Number(svg.dataset.shownColW) || col);
    if (!left || !col || !width || k === 1) return;
    svg.dataset.shownColW = String(wanted);
    const at = (x) => (x >= left ? left + (x - left) * k : x);
    for (const e of svg.querySelectorAll("[x], [x1], [x2], [data-x]")) {
      if (e.tagName === "rect" && e.hasAttribute("width") && e.parentNode !== svg) {
        const w = Number(e.getAttribute("width")), mid = Number(e.getAttribute("x")) + w / 2;
        e.setAttribute("x", String(at(mid) - w / 2));
        continue;
      }
      for (const name of ["x", "x1", "x2", "data-x"]) {
        if (e.hasAttribute(name)) e.setAttribute(name, String(at(Number(e.getAttribute(name)))));
      }
    }
    svg.setAttribute("width", String(left + wanted * nodes));
  }
  function sequence(url) {
    return ready.then((run) => {
      const q = new URLSearchParams(url.split("?")[1] || "");
      const svg = drawing(run, q.get("heartbeats") === "1");
      spread(svg, Number(q.get("width")) || 0);
      cut(svg, Number(q.get("position")) || 0);
      return new XMLSerializer().serializeToString(svg);
    });
  }
  // The clients' history: the server's drawing of the whole run, in the page's language.
  function history() {
    return ready.then((run) => run.history[lang]);
  }
  // Export SVG saves the picture shown, from the page itself.
  document.addEventListener("click", (ev) => {
    const link = ev.target.closest && ev.target.closest("#seq-export");
    const svg = link && document.querySelector("#sequence svg");
    if (!link) return;
    ev.preventDefault();
    if (!svg) return;
    const save = document.createElement("a");
    save.href = URL.createObjectURL(new Blob([new XMLSerializer().serializeToString(svg)], { type: "image/svg+xml" }));
    save.download = "sequence.svg";
    save.click();
    setTimeout(() => URL.revokeObjectURL(save.href), 1000);
  }, true);

})();
