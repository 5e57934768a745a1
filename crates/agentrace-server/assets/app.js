// agentrace viewer: plain JS, no build step. Every string that came from an
// agent or a provider is inserted with textContent (through `el`), never as
// HTML. The page is served with a CSP that forbids inline scripts.
"use strict";

const PAGE = 500;
// The most event rows the page holds: scrolling on through a long run drops
// the oldest rows, so the page stays as light after 100,000 events as after
// 5,000 (the rows dropped are a "Back to the start" away).
const MAX_ROWS = 5000;
const params = new URLSearchParams(location.search);
const token = params.get("token");

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("data-")) node.setAttribute(key, String(value));
    else if (key === "onclick") node.addEventListener("click", value);
    else if (key === "hidden") node.hidden = true;
    else node.setAttribute(key, String(value));
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
}

async function api(path) {
  const headers = token ? { Authorization: "Bearer " + token } : {};
  const response = await fetch(path, { headers });
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
}

function withToken(path) {
  if (!token) return path;
  return path + (path.includes("?") ? "&" : "?") + "token=" + encodeURIComponent(token);
}

function showError(error) {
  const node = document.getElementById("error");
  node.hidden = false;
  node.textContent = String(error && error.message ? error.message : error);
}

// ----- run list -----------------------------------------------------------

async function showRuns() {
  document.getElementById("runs-view").hidden = false;
  const body = document.querySelector("#runs tbody");
  clear(body);
  await moreRuns(0);
}

// One page of the run list (the server pages it: `{runs, total}`).
const RUNS_PAGE = 100;

async function moreRuns(offset) {
  const { runs, total } = await api("/api/runs?limit=" + RUNS_PAGE + "&offset=" + offset);
  const body = document.querySelector("#runs tbody");
  for (const run of runs) {
    body.append(el("tr", { "data-run": run.id },
      el("td", {}, el("a", { href: withToken("/runs/" + encodeURIComponent(run.id)) }, run.id)),
      el("td", {}, el("span", { class: "badge state-" + run.status }, run.status)),
      el("td", {}, run.provider),
      el("td", {}, run.counts.events),
      el("td", {}, run.warningCount),
      el("td", {}, run.startedAt || "")));
  }
  const shown = offset + runs.length;
  const more = document.getElementById("runs-more");
  const count = document.getElementById("runs-total");
  if (count) count.textContent = shown + " of " + total + " runs";
  if (more) {
    more.hidden = shown >= total;
    more.onclick = () => moreRuns(shown).catch(showError);
  }
}

// ----- one run --------------------------------------------------------------

const view = {
  id: null,
  run: null,
  agents: [],
  records: new Map(), // threadId → record
  actor: "all",
  q: "",
  next: 0,
  done: false,
  loading: false,
  lanes: new Map(), // threadId → <ol class="lane">
  rows: [], // the event rows shown, oldest first
  head: 0, // rows[0..head] were dropped already
  droppedThrough: 0, // the last sequence dropped, 0 for none
  lastSequence: 0,
  generation: 0,
};

function roleBadge(actor) {
  const span = el("span", {
    class: "badge actor role-" + actor.role,
    "data-thread": actor.threadId || "",
    title: actor.threadId || "no thread",
  }, actor.label);
  return span;
}

function renderSummary() {
  const run = view.run;
  const box = document.getElementById("summary");
  clear(box);
  const source = run.resultSource;
  const sourceText = source
    ? (labelOf(source.threadId) || "unknown") + " (" + (source.role || "unknown") + ")" + (source.threadId ? ", thread " + source.threadId : "")
    : "—";
  box.append(el("h1", {}, run.id),
    el("dl", {},
      el("dt", {}, "status"), el("dd", { id: "run-status" }, run.status + (run.error ? ": " + run.error : "")),
      el("dt", {}, "provider"), el("dd", {}, run.provider + " (" + run.source + ")"),
      el("dt", {}, "root"), el("dd", {}, run.rootThreadId || "unknown"),
      el("dt", {}, "result"), el("dd", { id: "run-result" }, run.result === null || run.result === undefined ? "—" : run.result),
      el("dt", {}, "from"), el("dd", { id: "run-source" }, sourceText),
      el("dt", {}, "counts"), el("dd", {},
        run.counts.events + " events · " + run.counts.unknownActor + " message/tool events of unknown actor · " +
        run.counts.undecodedLines + " undecoded lines · " + run.counts.unknownFrames + " unknown frames")));
  document.getElementById("live").hidden = run.status !== "running";
}

function renderWarnings(warnings) {
  const box = document.getElementById("warnings");
  clear(box);
  box.append(el("h2", {}, "Warnings (" + warnings.length + ")"));
  const list = el("ul", { id: "warning-list" });
  for (const warning of warnings) {
    list.append(el("li", { class: "warning", "data-code": warning.code },
      el("span", { class: "badge sev-" + warning.severity }, warning.severity),
      el("code", {}, warning.code), " ", warning.message));
  }
  if (!warnings.length) list.append(el("li", {}, "none"));
  box.append(list);
}

function labelOf(threadId) {
  let found = null;
  const walk = (nodes) => nodes.forEach((node) => {
    if (node.threadId === threadId) found = node.label;
    walk(node.children || []);
  });
  walk(view.agents);
  return found;
}

function renderTree() {
  const tree = document.getElementById("tree");
  clear(tree);
  const item = (node) => {
    const record = view.records.get(node.threadId);
    const state = record ? record.state + (record.outcome ? " · " + record.outcome : "") : node.status;
    const li = el("li", { class: "agent", "data-thread": node.threadId },
      el("span", { class: "badge role-" + node.role }, node.role),
      el("span", { class: "label" }, node.label), " ",
      el("span", { class: "badge state state-" + (record ? record.state : node.status) }, state), " ",
      el("small", {}, node.eventCount + " events, " + node.toolCount + " tools" + (node.tokens ? ", " + node.tokens.totalTokens + " tokens" : "")));
    if (node.role === "unknown") li.append(el("span", { class: "reason" }, "ownership unknown"));
    if (node.children && node.children.length) {
      const ul = el("ul", {});
      node.children.forEach((child) => ul.append(item(child)));
      li.append(ul);
    }
    return li;
  };
  view.agents.forEach((node) => tree.append(item(node)));
}

function summaryOf(event) {
  switch (event.type) {
    case "message": return (event.role === "user" ? "user: " : "") + event.text;
    case "reasoning": return event.text;
    case "tool_use": return event.name + " " + event.input;
    case "tool_result": return event.name + " → " + (event.status || "") + (event.exitCode !== null && event.exitCode !== undefined ? " exit " + event.exitCode : "") + (event.output ? "\n" + event.output : "");
    case "agent_spawned": return "spawned " + (labelOf(event.childThreadId) || event.childThreadId) + (event.prompt ? ": " + event.prompt : "");
    case "agent_completed": return (labelOf(event.threadId) || event.threadId) + " ended " + event.status + (event.result ? ": " + event.result : "");
    case "agent_wait_started": return "waits for its helpers";
    case "turn_started": return "turn " + event.turnId;
    case "turn_completed": return "turn " + event.turnId + " " + event.status + (event.error ? ": " + event.error : "");
    case "done": return "done: " + (event.result || "(no result)");
    case "failed": case "interrupted": return event.type + (event.error ? ": " + event.error : "");
    case "warning": return event.warning.code + ": " + event.warning.message;
    case "error": return event.message;
    case "actor_resolved": return "now known as " + event.actor.label;
    case "unknown": return event.reason;
    case "delta": return event.text;
    default: return "";
  }
}

function eventRow(envelope) {
  const event = envelope.event || {};
  const actor = envelope.actor;
  const raw = el("pre", { class: "raw", hidden: true });
  const toggle = el("button", { class: "raw-toggle", onclick: () => {
    if (!raw.firstChild) raw.textContent = JSON.stringify(envelope.raw !== undefined ? envelope.raw : envelope, null, 2);
    raw.hidden = !raw.hidden;
  } }, "raw");
  const row = el("li", { class: "event", "data-seq": envelope.sequence, "data-type": event.type, "data-thread": actor.threadId || "" },
    el("span", { class: "seq" }, "#" + envelope.sequence),
    roleBadge(actor),
    el("span", { class: "type" }, event.type || "?"),
    el("span", { class: "text" }, summaryOf(event)), " ", toggle);
  if (actor.role === "unknown") {
    row.append(el("span", { class: "reason" }, actor.reason || (actor.threadId ? "thread not linked to a spawner" : "provider event had no thread id")));
  }
  row.append(raw);
  return row;
}

function laneFor(threadId, parentThreadId) {
  let lane = view.lanes.get(threadId);
  if (lane) return lane;
  const parent = (parentThreadId && view.lanes.get(parentThreadId)) || document.getElementById("timeline");
  lane = el("ol", { class: "lane", "data-lane": threadId });
  const head = el("li", { class: "lane-head", onclick: () => lane.classList.toggle("collapsed") },
    "▸ " + (labelOf(threadId) || threadId));
  lane.append(head);
  parent.append(el("li", { class: "lane-box" }, lane));
  view.lanes.set(threadId, lane);
  return lane;
}

function placeEvent(envelope) {
  const event = envelope.event || {};
  const actor = envelope.actor;
  const nested = view.actor === "all" && !view.q;
  let container = document.getElementById("timeline");
  if (nested) {
    if (actor.role === "helper" && actor.threadId) {
      container = laneFor(actor.threadId, actor.parentThreadId);
    } else if (actor.threadId && view.lanes.has(actor.threadId)) {
      container = view.lanes.get(actor.threadId);
    }
  }
  const row = eventRow(envelope);
  container.append(row);
  view.rows.push({ row, sequence: envelope.sequence });
  if (nested && event.type === "agent_spawned") {
    const parent = view.lanes.has(event.parentThreadId) ? event.parentThreadId : null;
    laneFor(event.childThreadId, parent);
  }
  if (event.type === "actor_resolved") applyActor(event.threadId, event.actor);
  view.lastSequence = Math.max(view.lastSequence, envelope.sequence);
}

function applyActor(threadId, actor) {
  document.querySelectorAll(".actor").forEach((badge) => {
    if (badge.getAttribute("data-thread") !== threadId) return;
    badge.textContent = actor.label;
    badge.className = "badge actor role-" + actor.role;
  });
}

// Drops the oldest rows past MAX_ROWS.
function dropOldRows() {
  const shown = view.rows.length - view.head;
  if (shown <= MAX_ROWS) return;
  for (let index = view.head; index < view.rows.length - MAX_ROWS; index += 1) {
    view.rows[index].row.remove();
    view.droppedThrough = Math.max(view.droppedThrough, view.rows[index].sequence);
  }
  view.head = view.rows.length - MAX_ROWS;
  // Compact now and then, so the list of rows never grows with the run.
  if (view.head > MAX_ROWS) {
    view.rows = view.rows.slice(view.head);
    view.head = 0;
  }
  document.getElementById("earlier").hidden = false;
  document.getElementById("earlier-text").textContent =
    "Events up to #" + view.droppedThrough + " are no longer shown.";
}

function resetTimeline() {
  view.generation += 1;
  view.next = 0;
  view.done = false;
  view.lanes = new Map();
  view.rows = [];
  view.head = 0;
  view.droppedThrough = 0;
  document.getElementById("earlier").hidden = true;
  clear(document.getElementById("timeline"));
  loadMore();
}

async function loadMore() {
  if (view.loading || view.done) return;
  view.loading = true;
  const generation = view.generation;
  let answered = false;
  const query = new URLSearchParams({ after: String(view.next), limit: String(PAGE) });
  if (view.actor !== "all") query.set("actor", view.actor);
  if (view.q) query.set("q", view.q);
  try {
    const page = await api("/api/runs/" + encodeURIComponent(view.id) + "/events?" + query);
    if (generation !== view.generation) return;
    page.events.forEach(placeEvent);
    dropOldRows();
    view.next = page.next === null ? (page.events.length ? page.events[page.events.length - 1].sequence : view.next) : page.next;
    view.done = page.next === null;
    document.getElementById("load-more").hidden = view.done;
    document.getElementById("status-line").textContent =
      document.querySelectorAll("#timeline .event").length + " events shown" + (view.done ? "" : " · more below");
    answered = true;
  } catch (error) {
    showError(error);
  } finally {
    if (generation === view.generation) {
      view.loading = false;
      // A page that hardly filled the screen (a search or filter that
      // matched little of the stretch the server scanned) leaves the "more"
      // marker in view, and the observer only fires when that changes.
      // After an error the user asks again (Load more), never a loop.
      if (answered && !view.done && moreInView()) setTimeout(loadMore, 0);
    }
  }
}

function moreInView() {
  const box = document.getElementById("more").getBoundingClientRect();
  return box.bottom >= 0 && box.top <= window.innerHeight;
}

async function loadRun(id) {
  const detail = await api("/api/runs/" + encodeURIComponent(id));
  view.run = detail.run;
  view.agents = detail.agents;
  renderSummary();
  renderWarnings(detail.warnings);
  try {
    const { records } = await api("/api/runs/" + encodeURIComponent(id) + "/records");
    records.forEach((record) => { if (record.kind === "agent") view.records.set(record.providerId, record); });
  } catch (error) {
    showError(error);
  }
  renderTree();
}

async function showRun(id) {
  view.id = id;
  document.getElementById("run-view").hidden = false;
  await loadRun(id);
  resetTimeline();
  document.querySelectorAll("#filters button").forEach((button) => button.addEventListener("click", () => {
    document.querySelectorAll("#filters button").forEach((b) => b.classList.toggle("on", b === button));
    view.actor = button.getAttribute("data-actor");
    resetTimeline();
  }));
  document.getElementById("collapse").addEventListener("click", (event) => {
    const lanes = document.querySelectorAll(".lane");
    const collapse = !Array.from(lanes).every((lane) => lane.classList.contains("collapsed"));
    lanes.forEach((lane) => lane.classList.toggle("collapsed", collapse));
    event.target.textContent = collapse ? "Expand helpers" : "Collapse helpers";
  });
  let timer = null;
  document.getElementById("search").addEventListener("input", (event) => {
    clearTimeout(timer);
    timer = setTimeout(() => { view.q = event.target.value.trim(); resetTimeline(); }, 250);
  });
  document.getElementById("load-more").addEventListener("click", loadMore);
  document.getElementById("back-to-start").addEventListener("click", resetTimeline);
  new IntersectionObserver((entries) => {
    if (entries.some((entry) => entry.isIntersecting)) loadMore();
  }).observe(document.getElementById("more"));
  if (view.run.status === "running") follow(id);
}

function follow(id) {
  const source = new EventSource(withToken("/api/runs/" + encodeURIComponent(id) + "/stream?after=" + view.run.counts.events));
  source.addEventListener("envelope", (message) => {
    const envelope = JSON.parse(message.data);
    // Only a timeline that has everything up to here takes live rows; a
    // filtered or partly loaded one gets them when it pages on.
    if (view.done && envelope.sequence > view.lastSequence) {
      if (view.actor === "all" && !view.q) { placeEvent(envelope); dropOldRows(); view.next = envelope.sequence; }
      else view.done = false;
    }
  });
  source.addEventListener("record", (message) => {
    const { record } = JSON.parse(message.data);
    if (record.kind === "agent") view.records.set(record.providerId, record);
    renderTree();
  });
  source.addEventListener("warnings", (message) => renderWarnings(JSON.parse(message.data)));
  source.addEventListener("run", (message) => {
    const detail = JSON.parse(message.data);
    view.run = detail.run;
    view.agents = detail.agents;
    renderSummary();
    renderTree();
  });
}

async function main() {
  const match = location.pathname.match(/^\/runs\/([^/]+)$/);
  try {
    if (match) await showRun(decodeURIComponent(match[1]));
    else await showRuns();
    document.body.setAttribute("data-ready", "true");
  } catch (error) {
    showError(error);
  }
}

main();
