// gensolver live page: polls the JSON API and redraws in place (no reload, no external code).
"use strict";
(function () {
  const params = new URLSearchParams(location.search);
  const refresh = Math.max(200, Number(params.get("refresh")) || 2000);
  const fromHash = new URLSearchParams(location.hash.slice(1)).get("token");
  let token = fromHash || sessionStorage.getItem("gensolver-token") || "";
  if (fromHash) sessionStorage.setItem("gensolver-token", fromHash);
  const palette = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"];
  const colours = {};
  let updates = 0;
  const $ = (id) => document.getElementById(id);
  const fmt = (x, d = 2) => (x === null || x === undefined || Number.isNaN(x)) ? "–" : Number(x).toFixed(d);
  function colour(tenant) {
    if (!(tenant in colours)) colours[tenant] = palette[Object.keys(colours).length % palette.length];
    return colours[tenant];
  }
  function cell(text, cls) { const td = document.createElement("td"); td.textContent = text; if (cls) td.className = cls; return td; }
  function fill(tableId, rows) {
    const body = $(tableId).querySelector("tbody");
    body.replaceChildren(...rows.map((cells) => {
      const tr = document.createElement("tr");
      cells.forEach((c) => tr.appendChild(Array.isArray(c) ? cell(c[0], c[1]) : cell(c)));
      return tr;
    }));
  }
  // conditional GETs: each view is asked with the ETag of its last answer; a 304 reuses that
  // answer, and the page is redrawn only when a /v1 view changed
  const seen = {};  // path -> {tag, token, data}
  let notModified = 0, redraws = 0, changed = false;
  async function api(path) {
    const headers = token ? { Authorization: "Bearer " + token } : {};
    const prev = seen[path];
    if (prev && prev.token === token) headers["If-None-Match"] = prev.tag;
    const r = await fetch(path, { headers, cache: "no-store" });
    if (r.status === 304 && prev) { notModified += 1; return prev.data; }
    if (r.status === 401) { $("login").style.display = "block"; throw new Error("a token is needed: " + path); }
    if (!r.ok) { const p = await r.json().catch(() => ({})); const e = new Error(p.detail || r.statusText); e.status = r.status; throw e; }
    const data = await r.json();
    const tag = r.headers.get("ETag");
    if (tag) seen[path] = { tag, token, data }; else delete seen[path];
    if (path.startsWith("/v1/")) changed = true;
    return data;
  }
  function drawChart(health, rounds) {
    const svg = $("chart");
    const ns = "http://www.w3.org/2000/svg";
    const gpus = health.gpus, lease = health.lease;
    const rowH = 28, left = 110, width = 900 - left - 10;
    const t0 = rounds.length ? rounds[0].time : 0;
    const t1 = (rounds.length ? rounds[rounds.length - 1].time : 0) + lease;
    const x = (t) => left + (t - t0) / Math.max(1e-9, t1 - t0) * width;
    const parts = [];
    const el = (name, attrs, text) => {
      const e = document.createElementNS(ns, name);
      for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
      if (text !== undefined) e.textContent = text;
      parts.push(e); return e;
    };
    gpus.forEach((g, i) => {
      el("text", { x: 4, y: 20 + i * rowH + rowH / 2 + 4, class: "gpu-label" }, g.id);
      el("line", { x1: left, x2: left + width, y1: 20 + (i + 1) * rowH, y2: 20 + (i + 1) * rowH, class: "axis" });
    });
    for (const r of rounds) el("text", { x: x(r.time) + 2, y: 12, class: "round-label" }, "r" + r.round);
    const row = Object.fromEntries(gpus.map((g, i) => [g.id, i]));
    const stack = {};
    for (const r of rounds) {
      for (const a of r.assignments) {
        const end = a.start + Math.min(a.length, lease);
        for (const g of a.gpus) {
          const i = row[g]; if (i === undefined) continue;
          const key = g + "@" + a.start;
          const used = stack[key] || 0;
          const h = Math.max(2, (rowH - 4) * Math.min(1, a.memory / gpus[i].memory));
          stack[key] = used + h;
          const rect = el("rect", {
            class: "alloc", x: x(a.start), width: Math.max(1, x(end) - x(a.start) - 1),
            y: 20 + (i + 1) * rowH - 2 - used - h, height: h, fill: colour(a.tenant),
            "data-task": a.task, "data-tenant": a.tenant, "data-gpu": g, "data-round": r.round,
            "data-start": a.start, "data-end": end, "data-memory": a.memory,
          });
          const title = document.createElementNS(ns, "title");
          title.textContent = `${a.task} (${a.tenant}) on ${g}: ${fmt(a.memory, 1)} GiB, steps ${a.start}-${end}`;
          rect.appendChild(title);
        }
      }
    }
    svg.setAttribute("height", 30 + gpus.length * rowH);
    svg.replaceChildren(...parts);
  }
  async function update() {
    try {
      changed = false;
      const health = await api("/healthz");
      const me = await api("/v1/me");
      const rounds = (await api("/v1/rounds?limit=12")).rounds;
      let tenants;
      if (me.admin) tenants = (await api("/v1/tenants?limit=100")).tenants;  // the first page
      else tenants = [await api("/v1/tenants/" + encodeURIComponent(me.tenant))];
      const queue = (await api("/v1/tasks?state=waiting&limit=200")).tasks;
      if (changed || redraws === 0) { draw(health, rounds, tenants, queue); redraws += 1; }
      updates += 1;
      $("status").textContent = `${me.admin ? "operator" : "tenant " + me.tenant} · ${health.rounds} rounds · step ${health.clock} · ` +
        `${health.gpus.length} GPUs · mechanism ${health.mechanism} · updated ${new Date().toLocaleTimeString()}`;
      Object.assign($("status").dataset, { updates: String(updates), redraws: String(redraws),
        notModified: String(notModified) });
      $("error").textContent = "";
    } catch (e) {
      $("error").textContent = String(e.message || e);
    }
  }
  function draw(health, rounds, tenants, queue) {
    drawChart(health, rounds);
    fill("rounds", rounds.slice().reverse().map((r) => [r.round, r.time, [r.status, "l"], fmt(r.welfare), r.bids,
      fmt(r.revenue), r.queue, fmt(r.seconds.total, 3)]));
    fill("credits", tenants.map((t) => [[t.tenant, "l"], fmt(t.balance), fmt(t.spent), fmt(t.weight, 3),
      t.tasks.waiting, t.tasks.running]));
    fill("queue", queue.map((q) => [[q.id, "l"], [q.tenant, "l"], fmt(q.remaining, 1),
      fmt(q.task.preferred_memory, 1) + " GiB", fmt(q.task.value)]));
    $("queue-count").textContent = "(" + queue.length + " waiting)";
  }
  $("use").addEventListener("click", () => {
    token = $("token").value.trim(); sessionStorage.setItem("gensolver-token", token);
    $("login").style.display = "none"; update();
  });
  // poll without overlap: the next update is scheduled only once this one has finished
  async function loop() { await update(); setTimeout(loop, refresh); }
  loop();
})();
