// The boot page: follows /ui/events (server-sent events) and redraws the nodes by state, grouped as
// the server lays them out, and the curve of nodes healthy over time. Every text from the server
// (node names, a failed node's error: hostile hosts write some of it) goes in through textContent,
// never as HTML.
"use strict";

(function () {
  const svgNS = "http://www.w3.org/2000/svg";
  let view = null;
  let clockSkew = 0; // the server's clock minus the browser's, in ms
  let source = null;

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function ago(t) {
    if (!t) return "";
    const s = Math.max(0, Math.round((Date.now() + clockSkew - Date.parse(t)) / 1000));
    if (s < 120) return s + " s ago";
    if (s < 7200) return Math.round(s / 60) + " min ago";
    return Math.round(s / 3600) + " h ago";
  }

  function setConn(state, text) {
    const c = document.getElementById("conn");
    c.dataset.conn = state;
    c.textContent = text;
  }

  function drawSummary(v) {
    const box = document.getElementById("summary");
    box.replaceChildren();
    for (const c of v.states) {
      const e = el("span", "count state-" + c.state, c.state + " " + c.nodes);
      e.dataset.state = c.state;
      e.dataset.nodes = String(c.nodes);
      box.appendChild(e);
    }
  }

  function drawGroups(v) {
    const box = document.getElementById("groups");
    let total = 0;
    for (const g of v.groups) total += g.nodes.length;
    box.className = total <= 64 ? "big" : "";
    box.dataset.layout = v.layout;
    box.replaceChildren();
    for (const g of v.groups) {
      const ge = el("section", "group");
      ge.dataset.group = g.name;
      const title = v.layout === "all" ? g.name : v.layout + " " + g.name;
      ge.appendChild(el("h3", "", title + " (" + g.nodes.length + ")"));
      const ns = el("div", "nodes");
      for (const n of g.nodes) {
        const ne = el("span", "node state-" + n.state, total <= 64 ? n.name : undefined);
        ne.dataset.node = n.name;
        ne.dataset.state = n.state;
        let tip = n.name + ": " + n.state;
        if (n.since) tip += " since " + ago(n.since);
        if (n.attempt) tip += ", attempt " + n.attempt;
        if (n.position && n.position !== n.name) tip += ", position " + n.position;
        if (n.error) tip += "\n" + n.error;
        ne.title = tip;
        ns.appendChild(ne);
      }
      ge.appendChild(ns);
      box.appendChild(ge);
    }
  }

  // The failed nodes with their errors (a node's own words: text only).
  function drawFailed(v) {
    const list = document.getElementById("failed");
    list.replaceChildren();
    for (const g of v.groups) {
      for (const n of g.nodes) {
        if (n.state !== "failed") continue;
        const li = el("li");
        li.dataset.node = n.name;
        li.appendChild(el("span", "name", n.name));
        li.appendChild(el("span", "error", n.error || "(no reason given)"));
        list.appendChild(li);
      }
    }
    document.getElementById("failed-box").hidden = list.children.length === 0;
  }

  function svg(tag, attrs, text) {
    const e = document.createElementNS(svgNS, tag);
    for (const k in attrs) e.setAttribute(k, String(attrs[k]));
    if (text !== undefined) e.textContent = text;
    return e;
  }

  // A step curve of points (seconds, count) in a 400x220 box with axes.
  function drawCurve(v) {
    const c = v.curve;
    const box = document.getElementById("curve");
    box.replaceChildren();
    const x0 = 40, y0 = 190, w = 350, h = 170;
    const pred = c.prediction || [];
    // The time axis runs to now: a boot that stalls shows as a flat line growing, not a finished one.
    const elapsed = c.start ? (Date.now() + clockSkew - Date.parse(c.start)) / 1000 : 0;
    const last = Math.max(1, elapsed, c.healthy.length ? c.healthy[c.healthy.length - 1] : 0, pred.length ? pred[pred.length - 1] : 0);
    const n = Math.max(1, c.nodes);
    const X = (s) => (x0 + (s / last) * w).toFixed(1);
    const Y = (k) => (y0 - (k / n) * h).toFixed(1);
    box.appendChild(svg("line", { class: "axis", x1: x0, y1: y0, x2: x0 + w, y2: y0 }));
    box.appendChild(svg("line", { class: "axis", x1: x0, y1: y0, x2: x0, y2: y0 - h }));
    box.appendChild(svg("line", { class: "total", x1: x0, y1: Y(n), x2: x0 + w, y2: Y(n) }));
    box.appendChild(svg("text", { x: 2, y: Number(Y(n)) + 4 }, String(n)));
    box.appendChild(svg("text", { x: 2, y: y0 + 4 }, "0"));
    box.appendChild(svg("text", { x: x0, y: y0 + 15 }, "0 s"));
    box.appendChild(svg("text", { x: x0 + w - 40, y: y0 + 15 }, last.toFixed(1) + " s"));
    const steps = (times, until) => {
      let p = X(0) + "," + Y(0);
      times.forEach((t, i) => { p += " " + X(t) + "," + Y(i) + " " + X(t) + "," + Y(i + 1); });
      return p + " " + X(until) + "," + Y(times.length);
    };
    if (pred.length) box.appendChild(svg("polyline", { class: "predicted", points: steps(pred, pred[pred.length - 1]) }));
    const m = svg("polyline", { class: "measured", points: steps(c.healthy, Math.max(elapsed, c.healthy.length ? c.healthy[c.healthy.length - 1] : 0)) });
    m.dataset.healthy = String(c.healthy.length);
    box.appendChild(m);
    const since = c.start ? ago(c.start) + " (" + c.start.replace("T", " ").replace(/\.\d+/, "").replace("Z", " UTC") + ")" : "";
    let note = c.healthy.length + " of " + c.nodes + (c.run ? " nodes of the run healthy" : " nodes healthy");
    if (c.failed) note += ", " + c.failed + " failed";
    if (since) note += c.run ? "; the run began " + since : "; the current boot attempts began " + since;
    document.getElementById("curve-note").textContent = note;
    const p = document.getElementById("prediction-note");
    p.dataset.predicted = String(pred.length);
    p.textContent = c.run
      ? "solid: measured by this server; dashed: predicted by the bootctl boot run " + c.run + " (" + pred.length + " nodes, the last healthy at " + (pred.length ? pred[pred.length - 1].toFixed(1) : "0") + " s)"
      : "No bootctl boot run has told this server its prediction: the curve is what the server measured.";
  }

  function draw() {
    if (!view) return;
    document.getElementById("server").textContent = view.server;
    document.title = "bootfabric: " + view.server;
    drawSummary(view);
    drawGroups(view);
    drawFailed(view);
    drawCurve(view);
  }

  function connect() {
    source = new EventSource("/ui/events");
    source.onopen = () => setConn("live", "live");
    source.onmessage = (e) => {
      let msg;
      try { msg = JSON.parse(e.data); } catch (err) { setConn("lost", "bad event from the server: " + err); return; }
      clockSkew = Date.parse(msg.at) - Date.now();
      if (msg.view) view = msg.view;
      draw();
      setConn("live", "live, updated " + new Date(Date.parse(msg.at)).toISOString().replace("T", " ").slice(0, 19) + " UTC");
    };
    source.onerror = () => {
      if (source.readyState === EventSource.CLOSED) {
        // Refused (503: too many watchers) or the server gone: the browser gives up, so retry here.
        setConn("refused", "not connected (the server refused or is gone); retrying in 30 s");
        source.close();
        setTimeout(connect, 30000);
      } else {
        setConn("lost", "connection lost; reconnecting");
      }
    };
  }

  connect();
  // The curve's time axis and its note's age move between events too (the tiles wait for an event).
  setInterval(() => { if (view) drawCurve(view); }, 5000);
})();
