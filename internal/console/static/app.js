// The codemode console. Every text shown comes from models and tools, so
// the DOM is built with createElement and textContent only, never markup.
"use strict";

let csrf = "";
let selected = "";
let state = null;

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k === "onclick") e.addEventListener("click", v);
    else e.setAttribute(k, v);
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    e.append(typeof c === "string" ? document.createTextNode(c) : c);
  }
  return e;
}

function mib(bytes) {
  return bytes < 0 ? "" : (bytes / 1048576).toFixed(1) + " MiB";
}

function ago(ms) {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return s + "s";
  if (s < 3600) return Math.floor(s / 60) + "m";
  return Math.floor(s / 3600) + "h" + Math.floor((s % 3600) / 60) + "m";
}

async function post(path, body) {
  const res = await fetch(path, {
    method: "POST",
    headers: { "X-CSRF-Token": csrf, "Content-Type": "application/json" },
    body: body === undefined ? "" : JSON.stringify(body),
  });
  if (!res.ok && res.status !== 204) {
    alert(await res.text());
  }
  refresh();
}

function renderApprovals() {
  const list = document.getElementById("approval-list");
  const items = state.approvals.map((a) =>
    el("div", { class: "approval", "data-id": a.id },
      el("div", {}, el("strong", {}, a.action || a.server + "." + a.tool), " ",
        el("span", { class: "muted" }, "session " + a.session + " of " + a.principal)),
      a.reason ? el("div", {}, "Reason: " + a.reason) : null,
      el("pre", { class: "args" }, a.arguments),
      el("button", { class: "approve", onclick: () => post("api/approvals/" + a.id, { allow: true }) }, "Approve once"),
      el("button", { class: "approve-session", onclick: () => post("api/approvals/" + a.id, { allow: true, remember: true }) }, "Approve for the session"),
      el("button", { class: "deny", onclick: () => post("api/approvals/" + a.id, { allow: false }) }, "Deny")));
  list.replaceChildren(...(items.length ? items : [el("p", { class: "muted" }, "Nothing waits for approval.")]));
}

function renderSessions() {
  const now = Date.now();
  const rows = state.sessions.map((s) => {
    const actions = el("td", {});
    if (s.state !== "closed") {
      actions.append(
        el("button", { class: "reset", onclick: (ev) => { ev.stopPropagation(); post("api/sessions/" + s.id + "/reset"); } }, "Reset"),
        el("button", { class: "close", onclick: (ev) => { ev.stopPropagation(); post("api/sessions/" + s.id + "/close"); } }, "Close"));
    }
    return el("tr", { class: "session" + (s.id === selected ? " selected" : ""), "data-id": s.id, onclick: () => { selected = s.id; render(); } },
      el("td", {}, s.principal), el("td", {}, s.client || ""), el("td", {}, s.name),
      el("td", { class: "state" }, s.state), el("td", {}, ago(now - Date.parse(s.started))),
      el("td", {}, s.state === "running" ? "" : ago(s.idle_ms)), el("td", { class: "memory" }, mib(s.memory_bytes)),
      el("td", {}, String(s.cells.length)), actions);
  });
  document.getElementById("session-list").replaceChildren(...rows);
}

function renderTimeline() {
  const s = state.sessions.find((x) => x.id === selected) || state.sessions[0];
  const title = document.getElementById("timeline-title");
  const list = document.getElementById("cell-list");
  if (!s) {
    title.textContent = "Timeline";
    list.replaceChildren(el("p", { class: "muted" }, "No sessions yet."));
    return;
  }
  selected = s.id;
  title.textContent = "Timeline of " + s.principal + " / " + s.name;
  const cells = s.cells.slice().reverse().map((c) =>
    el("div", { class: "cell " + c.status, "data-id": c.id },
      el("div", {}, el("strong", { class: "status" }, c.status), " ",
        el("span", { class: "muted" }, new Date(c.started).toLocaleTimeString() + (c.status === "running" ? "" : ", " + c.duration_ms + " ms"))),
      el("pre", { class: "code" }, c.code),
      el("div", { class: "calls" }, ...c.calls.map((t) =>
        el("div", { class: "call outcome-" + t.outcome, "data-id": t.id },
          t.server + "." + t.tool + " " + t.arguments + " → " + t.outcome +
          (t.decision ? " [policy: " + t.decision + (t.rule ? " " + t.rule : "") + "]" : "") +
          (t.outcome === "running" ? "" : " " + t.duration_ms + " ms") + (t.error ? " " + t.error : "")))),
      c.output ? el("pre", { class: "output" }, c.output) : null,
      c.error ? el("pre", { class: "output error" }, c.error) : null,
      ...(c.files || []).map((f) => el("div", { class: "file muted" }, "resource " + f.uri + " (" + f.size + " bytes" + (f.description ? ", " + f.description : "") + ")"))));
  list.replaceChildren(...cells);
}

function renderServers() {
  const rows = state.servers.map((s) =>
    el("tr", { "data-name": s.name }, el("td", {}, s.name), el("td", {}, s.state), el("td", {}, String(s.restarts)), el("td", {}, String(s.calls)),
      el("td", { class: "error" }, s.errors.join("\n"))));
  document.getElementById("server-list").replaceChildren(...rows);
}

async function loadAudit() {
  const q = document.getElementById("audit-q").value;
  const res = await fetch("api/audit?q=" + encodeURIComponent(q));
  if (!res.ok) return;
  const a = await res.json();
  const status = document.getElementById("audit-status");
  status.textContent = !a.configured ? "no audit log configured (--audit-log)" : (a.verified ? "chain verified: " : "CHAIN BROKEN: ") + a.status;
  status.className = a.configured && !a.verified ? "error" : "muted";
  const rows = a.records.map((r) =>
    el("tr", {}, el("td", {}, String(r.seq)), el("td", {}, new Date(r.time).toLocaleString()), el("td", {}, r.kind),
      el("td", {}, r.principal || ""), el("td", {}, r.session || ""), el("td", {}, (r.server || "") + "." + (r.tool || "")),
      el("td", {}, (r.decision || "") + (r.rule ? " " + r.rule : "") + (r.approver ? " by " + r.approver : "")),
      el("td", {}, (r.outcome || "") + (r.duration_ms ? " " + r.duration_ms + " ms" : "")),
      el("td", {}, (r.reason || "") + (r.error ? " " + r.error : ""))));
  document.getElementById("audit-list").replaceChildren(...rows);
}

function renderHeadlines() {
  const heads = state.headlines || [];
  document.getElementById("headlines").hidden = heads.length === 0;
  document.getElementById("headline-list").replaceChildren(...heads.map((h) =>
    el("span", { class: "headline" }, el("strong", {}, String(h.value)), " " + h.name)));
}

function render() {
  renderHeadlines();
  document.getElementById("who").textContent = state.principal + (state.admin ? " (admin)" : "") + (state.backend ? " · sandbox: " + state.backend : "");
  renderApprovals();
  renderSessions();
  renderTimeline();
  renderServers();
}

async function refresh() {
  const res = await fetch("api/state");
  if (res.status === 401) {
    showLogin();
    return false;
  }
  const next = await res.json();
  const same = state !== null && next.version === state.version;
  state = next;
  csrf = state.csrf;
  document.getElementById("login").hidden = true;
  document.getElementById("app").hidden = false;
  document.getElementById("logout").hidden = false;
  if (!same) render(); // keeps the reader's selection when nothing changed
  return true;
}

function showLogin() {
  document.getElementById("app").hidden = true;
  document.getElementById("app").replaceChildren();
  document.getElementById("login").hidden = false;
  document.getElementById("login-failed").hidden = !location.search.includes("login=failed");
}

async function start() {
  document.getElementById("logout").addEventListener("click", async () => {
    await post("logout");
    location.replace("./");
  });
  if (!(await refresh())) return;
  let timer = 0;
  document.getElementById("audit-q").addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(loadAudit, 200);
  });
  document.getElementById("audit-refresh").addEventListener("click", loadAudit);
  loadAudit();
  const events = new EventSource("api/events");
  events.addEventListener("change", () => refresh());
}

start();
