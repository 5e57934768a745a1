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

// What an answer that came after an error shows is no longer wrong.
function hideError() {
  const node = document.getElementById("error");
  node.hidden = true;
  node.textContent = "";
}

function showError(error) {
  const node = document.getElementById("error");
  node.hidden = false;
  node.textContent = String(error && error.message ? error.message : error);
}

// ----- formatting ------------------------------------------------------------

// Rounded half up in whole numbers, one decimal under 10k and under 10M:
// the rule of `agentrace runs` (its `tokens_text`), so both lists agree.
// The rounded figure picks the unit: 9,960 is 10k and 999,600 1.0M.
function fmtTokens(n) {
  if (n === null || n === undefined) return "—";
  const tenthsOf = (unit) => Math.floor((n + unit / 20) / (unit / 10));
  const tenths = (unit) => { const t = tenthsOf(unit); return Math.floor(t / 10) + "." + (t % 10); };
  const wholeOf = (unit) => Math.floor((n + unit / 2) / unit);
  if (n < 1e3) return String(n);
  if (tenthsOf(1e3) < 100) return tenths(1e3) + "k";
  if (wholeOf(1e3) < 1000) return wholeOf(1e3) + "k";
  if (tenthsOf(1e6) < 100) return tenths(1e6) + "M";
  return wholeOf(1e6) + "M";
}

// `1 event`, `2 events`: a count with its noun, singular for one, as the
// CLI's `render::count` says it (the page said `1 events shown`).
function countText(number, one, many) {
  return number === 1 ? "1 " + one : number + " " + many;
}

// A token figure shortened as `fmtTokens` does, then `token` or `tokens`
// (`top`'s `1 token`).
function tokensText(n) {
  return n === 1 ? "1 token" : fmtTokens(n) + " tokens";
}

// `≥` when the cost is a floor, `$?` when nothing could be priced: to a
// hundredth of a cent at any size, as `show`, `diff` and `usage` print it
// (`render::cost_text`). A run of $2.3456 read `$2.35` beside show's.
function fmtCost(cost, status) {
  if (cost === null || cost === undefined) return "$?";
  return (status === "floor" ? "≥" : "") + "$" + cost.toFixed(4);
}

// A cost to the cent as Rust's `{:.2}` prints it: an exact tie (an odd
// eighth of a dollar, $0.125) goes to the even cent where `toFixed` goes up.
function centsText(cost) {
  if (Number.isInteger(cost * 8) && !Number.isInteger(cost * 4)) {
    const cents = Math.floor(cost * 100);
    return ((cents % 2 === 0 ? cents : cents + 1) / 100).toFixed(2);
  }
  return cost.toFixed(2);
}

// A run's cost in the run list as `agentrace runs` prints it (its
// `cost_text`): in cents, `≥` before a floor, `$?` when nothing could be
// priced, `<$0.01` for a cost that is not nothing but rounds to `$0.00`.
function fmtListCost(cost, status) {
  if (cost === null || cost === undefined || status === "unknown") return "$?";
  if (status === "floor") return "≥$" + centsText(cost);
  return cost > 0 && cost < 0.005 ? "<$0.01" : "$" + centsText(cost);
}

// A cost on the live page as `agentrace top` prints it (its `short_cost`):
// `$1.23`, `<$0.01` under a cent, `$0` for nothing, `≥` before what is not
// exact, `$?` when nothing could be priced.
function fmtTopCost(cost, status) {
  if (cost === null || cost === undefined) return "$?";
  const floor = status === "exact" ? "" : "≥";
  if (cost === 0) return floor + "$0";
  if (cost < 0.01) return floor + "<$0.01";
  return floor + "$" + centsText(cost);
}

// Milliseconds from one RFC 3339 time of the API to another (null when
// one is missing): a difference of the two texts would be NaN.
function msBetween(from, to) {
  return from && to ? Date.parse(to) - Date.parse(from) : null;
}

// Seconds to a tenth as the command line prints them (`10.5`, `977.5`):
// Rust's `{:.1}`, whose exact ties (a quarter or three quarters of a
// second) go to the even tenth where `toFixed` goes up.
function tenthsText(ms) {
  if (Math.abs(ms) % 500 === 250) {
    const tenths = Math.floor(ms / 100);
    return ((tenths % 2 === 0 ? tenths : tenths + 1) / 10).toFixed(1);
  }
  return (ms / 1000).toFixed(1);
}

// A run's time as `agentrace show` prints it (`10.5 s`, `977.5 s`).
function fmtSeconds(ms) {
  if (ms === null || ms === undefined || !isFinite(ms)) return "—";
  return tenthsText(ms) + " s";
}

// A duration as `agentrace diff` prints it (`0.8s`, `977.5s`).
function fmtDiffSeconds(ms) {
  if (ms === null || ms === undefined || !isFinite(ms)) return "—";
  return tenthsText(ms) + "s";
}

// A run's time as `agentrace runs` prints it (its `millis_text`): a tenth
// under ten seconds, rounded; past it whole units, cut (`42s`, `12m`,
// `3h05`). The list read `952 ms` and `11 s` beside `1.0s` and `10s`.
function fmtRunTime(ms) {
  if (ms === null || ms === undefined || !isFinite(ms)) return "—";
  const millis = Math.max(0, Math.round(ms));
  const tenths = Math.floor((millis + 50) / 100);
  if (tenths < 100) return Math.floor(tenths / 10) + "." + (tenths % 10) + "s";
  const seconds = Math.max(10, Math.floor(millis / 1000));
  if (seconds < 60) return seconds + "s";
  if (seconds < 3600) return Math.floor(seconds / 60) + "m";
  return Math.floor(seconds / 3600) + "h" + String(Math.floor(seconds / 60) % 60).padStart(2, "0");
}

function fmtDuration(ms) {
  if (ms === null || ms === undefined || !isFinite(ms)) return "—";
  if (ms < 1000) return Math.round(ms) + " ms";
  const s = ms / 1000;
  if (s < 60) return s.toFixed(s < 10 ? 1 : 0) + " s";
  const m = Math.floor(s / 60);
  if (m < 60) return m + " min " + Math.round(s % 60) + " s";
  return Math.floor(m / 60) + " h " + (m % 60) + " min";
}

// The reader's time zone: the run list's start times and day filters and
// the usage charts' days are the reader's own (the API's `tz=`), as
// `agentrace runs --tz local` gives them. UTC where the browser names none
// the server knows.
let ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";

// `path` asked in the reader's zone; in UTC if the server knows no such zone.
async function apiInZone(path) {
  const zoned = path + (path.includes("?") ? "&" : "?") + "tz=" + encodeURIComponent(ZONE);
  try {
    return await api(zoned);
  } catch (error) {
    if (ZONE === "UTC" || !String(error.message).startsWith("tz=")) throw error;
    ZONE = "UTC";
    return api(path);
  }
}

// The date and time parts of `time` in the reader's zone, to the minute,
// or (`exact`) to the millisecond with the zone's offset; the formatter
// made once per zone and precision (a page formats a time per row).
const zoneFormats = new Map();
function partsInZone(time, exact) {
  const key = ZONE + (exact ? " exact" : "");
  if (!zoneFormats.has(key)) {
    const more = exact ? { second: "2-digit", fractionalSecondDigits: 3, timeZoneName: "longOffset" } : {};
    zoneFormats.set(key, new Intl.DateTimeFormat("en-CA", { timeZone: ZONE, year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", hourCycle: "h23", ...more }));
  }
  const parts = {};
  for (const part of zoneFormats.get(key).formatToParts(time)) parts[part.type] = part.value;
  return parts;
}

// `YYYY-MM-DD HH:MM` in the reader's zone (`ZONE`).
function fmtTime(at) {
  if (at === null || at === undefined) return "";
  const time = new Date(at);
  if (isNaN(time.getTime())) return "";
  const parts = partsInZone(time, false);
  return parts.year + "-" + parts.month + "-" + parts.day + " " + parts.hour + ":" + parts.minute;
}

// An RFC 3339 time of the API in the reader's zone, with its offset
// (`2026-11-30T08:03:20.000+09:00`), as `agentrace show` prints it with
// AGENTRACE_TZ; in UTC, the API's own text.
function fmtInstant(text) {
  const time = new Date(text);
  if (ZONE === "UTC" || isNaN(time.getTime())) return text;
  const parts = partsInZone(time, true);
  // `GMT+09:00`, or `GMT` alone at UTC's offset.
  const offset = (parts.timeZoneName || "GMT").replace("GMT", "") || "+00:00";
  return parts.year + "-" + parts.month + "-" + parts.day + "T" + parts.hour + ":" + parts.minute + ":" + parts.second + "." + parts.fractionalSecond + offset;
}

// Says which zone the start times are in.
function zoneHeads() {
  for (const head of document.querySelectorAll("th.started-head")) {
    head.textContent = "started (" + ZONE + ")";
    head.title = "times in " + ZONE;
  }
}

function nav(current) {
  // The header's name leads home too: without the token a server behind
  // `--token-file` refused it (401).
  document.getElementById("home").setAttribute("href", withToken("/"));
  const bar = document.getElementById("nav");
  clear(bar);
  [["/", "Runs"], ["/live", "Live"], ["/usage", "Usage"], ["/compare", "Compare"]].forEach(([href, text]) => {
    bar.append(el("a", { href: withToken(href), class: href === current ? "on" : null }, text));
  });
}

// ----- run list (the dashboard) -------------------------------------------

// One page of the run list (the server pages it: `{runs, total}`).
const RUNS_PAGE = 50;

const list = { offset: 0, filters: {}, follow: null };

// The list's filters and order, by their query names (and the ids of
// their fields, `filter-<name>`).
const RUN_FILTERS = ["provider", "status", "project", "warning", "sort", "since", "until"];

// Values the URL gave that a field cannot hold (a status or warning code
// no option has): asked for as given until a filter is changed, so the
// server names what is wrong rather than the list dropping the filter and
// showing every run as if it were kept.
let unheldFilters = {};

function runFilters() {
  const filters = {};
  for (const name of RUN_FILTERS) {
    const value = document.getElementById("filter-" + name).value.trim();
    if (value) filters[name] = value;
    else if (unheldFilters[name]) filters[name] = unheldFilters[name];
  }
  return filters;
}

async function showRuns() {
  nav("/");
  document.getElementById("runs-view").hidden = false;
  const form = document.getElementById("run-filters");
  // The filters live in the URL, so a filtered list can be shared.
  for (const name of RUN_FILTERS) {
    const value = params.get(name);
    if (!value) continue;
    const field = document.getElementById("filter-" + name);
    field.value = value;
    if (field.value !== value) unheldFilters[name] = value;
  }
  const changed = () => { unheldFilters = {}; list.offset = 0; loadRuns().catch(showError); };
  form.addEventListener("change", changed);
  form.addEventListener("submit", (event) => { event.preventDefault(); changed(); });
  document.getElementById("runs-prev").addEventListener("click", () => { list.offset = Math.max(0, list.offset - RUNS_PAGE); loadRuns().catch(showError); });
  document.getElementById("runs-next").addEventListener("click", () => { list.offset += RUNS_PAGE; loadRuns().catch(showError); });
  document.getElementById("compare-selected").addEventListener("click", () => {
    const picked = pickedRuns();
    if (picked.length === 2) location.href = withToken("/compare?a=" + encodeURIComponent(picked[0]) + "&b=" + encodeURIComponent(picked[1]));
  });
  document.querySelector("#runs tbody").addEventListener("change", notePicks);
  let timer = null;
  document.getElementById("run-search").addEventListener("input", (event) => {
    clearTimeout(timer);
    timer = setTimeout(() => searchRuns(event.target.value.trim()).catch(showError), 250);
  });
  list.offset = Number(params.get("offset") || 0);
  await loadRuns();
}

// The last two parts of a run's folder (`work/agentrace`), as `agentrace
// runs` prints them: every project of one machine starts alike
// (`/home/dev/…`), so the start, cut to the cell, told them apart from
// none. The whole folder is the cell's title.
function projectText(project) {
  if (!project) return "";
  return project.replace(/\/+$/, "").split("/").slice(-2).join("/");
}

// The runs ticked to compare.
function pickedRuns() {
  return Array.from(document.querySelectorAll("#runs tbody input[type=checkbox]:checked")).map((box) => box.value);
}

// The compare button is live once two runs are ticked, and says so: it
// did nothing, without a word, when clicked with one run ticked or none.
function notePicks() {
  const button = document.getElementById("compare-selected");
  const count = pickedRuns().length;
  button.disabled = count !== 2;
  button.title = count === 2 ? "" : "tick two runs to compare them (" + count + " ticked)";
}

// A run's warnings but its info-level notes, as `top` says them.
function problemsText(run) {
  const count = run.warningCount - (run.noteCodes || []).length;
  return count > 0 ? countText(count, "warning", "warnings") : null;
}

function warningBadges(run) {
  const counts = new Map();
  for (const code of run.warningCodes || []) counts.set(code, (counts.get(code) || 0) + 1);
  // Info-level notes (how a child's copy of its parent's history was
  // counted): shown, but not as a problem.
  const notes = new Set(run.noteCodes || []);
  const cell = el("td", { class: "warnings" });
  for (const [code, count] of counts) cell.append(el("span", { class: notes.has(code) ? "badge note" : "badge warn", "data-code": code, title: notes.has(code) ? code + " (a note: nothing went wrong)" : code }, code + (count > 1 ? " ×" + count : "")));
  if (!counts.size && run.warningCount) cell.append(el("span", { class: "badge warn" }, String(run.warningCount)));
  return cell;
}

async function loadRuns() {
  list.filters = runFilters();
  const query = new URLSearchParams(list.filters);
  const shown = new URLSearchParams(list.filters);
  if (list.offset) shown.set("offset", String(list.offset));
  if (token) shown.set("token", token);
  history.replaceState(null, "", "/" + (shown.toString() ? "?" + shown : ""));
  query.set("limit", String(RUNS_PAGE));
  query.set("offset", String(list.offset));
  let answer;
  try {
    answer = await apiInZone("/api/runs?" + query);
  } catch (error) {
    // A refused filter (an `until` before its `since`) lists no run: the
    // rows of the filters before it stayed under the error, read as its.
    clear(document.querySelector("#runs tbody"));
    document.getElementById("runs-total").textContent = "";
    document.getElementById("runs-empty").hidden = true;
    throw error;
  }
  const { runs, total } = answer;
  // A page past the end (an old link, or runs gone since): the last page,
  // never "101–100 of 40 runs" over an empty table.
  if (!runs.length && total > 0 && list.offset >= total) {
    list.offset = Math.floor((total - 1) / RUNS_PAGE) * RUNS_PAGE;
    return loadRuns();
  }
  hideError();
  zoneHeads();
  const body = document.querySelector("#runs tbody");
  clear(body);
  for (const run of runs) {
    const tokens = run.tokens ? run.tokens.totalTokens : 0;
    const duration = msBetween(run.startedAt, run.endedAt || run.updatedAt);
    body.append(el("tr", { "data-run-id": run.id, "data-run": run.id, "data-tokens": tokens, "data-cost": run.cost === null || run.cost === undefined ? "" : run.cost },
      el("td", {}, el("input", { type: "checkbox", value: run.id, "aria-label": "pick " + run.id })),
      // Cut to its start when long (the whole id in the title): a
      // 43-character id left the result a dozen pixels at 1280 px.
      el("td", { class: "run-id", title: run.id }, el("a", { href: withToken("/runs/" + encodeURIComponent(run.id)) }, run.id)),
      el("td", {}, el("span", { class: "badge state-" + run.status }, run.status),
        // The root answered, but a helper still works (or reports back).
        run.helpersWorking ? el("span", { class: "badge state-working helpers-working", title: "the root's turn ended; a helper or background command still works" }, "helpers working") : null,
        // Stopped mid-turn (a crash, a kill, a capture cut short): nothing
        // is at work, whatever the status says.
        run.sessionEnded ? el("span", { class: "badge session-ended", title: "the session ended before the root's turn did; nothing is at work" }, "session ended") : null),
      el("td", {}, run.provider),
      el("td", { class: "project", title: run.project || "" }, projectText(run.project)),
      el("td", { class: "started" }, fmtTime(run.startedAt)),
      el("td", { class: "num duration" }, fmtRunTime(duration)),
      el("td", { class: "num" }, run.agents === undefined ? "" : run.agents),
      el("td", { class: "num" }, fmtTokens(tokens)),
      el("td", { class: "num" }, fmtListCost(run.cost, run.costStatus)),
      warningBadges(run),
      el("td", { class: "result", title: run.result || "" }, run.result ? run.result.slice(0, 160) : "")));
  }
  const count = document.getElementById("runs-total");
  count.textContent = (total ? (list.offset + 1) + "–" + (list.offset + runs.length) : "0") + " of " + countText(total, "run", "runs");
  // An empty list says why: nothing recorded yet, or nothing that the
  // filters keep (it was a bare head of columns).
  const empty = document.getElementById("runs-empty");
  empty.hidden = total > 0;
  empty.textContent = Object.keys(list.filters).length
    ? "No run matches these filters."
    : "No runs yet: `agentrace import` reads the Codex and Claude Code sessions on disk, `agentrace samples` records three to look at, and `agentrace serve --watch` follows new ones.";
  const prev = document.getElementById("runs-prev");
  const next = document.getElementById("runs-next");
  // Pages of another order than the newest first are not older or newer.
  const byStart = !list.filters.sort;
  prev.textContent = byStart ? "newer" : "previous";
  next.textContent = byStart ? "older" : "next";
  prev.hidden = list.offset === 0;
  next.hidden = list.offset + runs.length >= total;
  notePicks();
  followRuns(runs);
}

// The list follows what goes on while you look at it: every few seconds
// while one of its runs is live (running, or its helpers at work), or it
// is the first page (where a new session appears). Not while the tab is
// hidden (it catches up when shown), nor while two runs are being picked
// to compare (a new page would drop the picks).
const RUNS_FOLLOW_MS = 3000;
function followRuns(runs) {
  clearTimeout(list.follow);
  const live = runs.some((run) => (run.status === "running" && !run.sessionEnded) || run.helpersWorking);
  if (!live && list.offset !== 0) return;
  list.follow = setTimeout(() => {
    const picking = document.querySelector("#runs tbody input[type=checkbox]:checked");
    if (document.hidden || picking || document.getElementById("runs-view").hidden) {
      followRuns(runs);
      return;
    }
    loadRuns().catch(showError);
  }, RUNS_FOLLOW_MS);
}

// A search across every run (the catalog's), each hit opening its run at
// the matching event.
async function searchRuns(q) {
  const box = document.getElementById("search-hits");
  clear(box);
  if (!q) return;
  // Within the list's filters (but its status, which is a run's, not a
  // text's), their days the reader's.
  const query = new URLSearchParams({ limit: "50", q });
  const filters = runFilters();
  for (const name of ["provider", "project", "since", "until"]) if (filters[name]) query.set(name, filters[name]);
  const { hits } = await apiInZone("/api/search?" + query);
  for (const hit of hits) {
    box.append(el("li", { class: "hit", "data-run-id": hit.runId, "data-seq": hit.sequence },
      el("a", { href: withToken("/runs/" + encodeURIComponent(hit.runId) + "?seq=" + hit.sequence) }, hit.runId + " #" + hit.sequence),
      " ", el("span", { class: "badge role-" + hit.role }, hit.label), " ",
      el("span", { class: "snippet" }, hit.snippet)));
  }
  if (!hits.length) box.append(el("li", {}, "no match"));
}

// ----- one run --------------------------------------------------------------

const view = {
  id: null,
  run: null,
  agents: [],
  records: new Map(), // threadId → record
  working: new Set(), // childWorkId of each record not ended (agents and commands)
  actor: "all",
  q: "",
  next: 0,
  done: false,
  loading: false,
  lanes: new Map(), // threadId → <ol class="lane">
  rows: [], // the event rows shown, oldest first
  // Events the server sent that the page folds (bookkeeping), since the
  // timeline was last reset: a search whose hits are all folded said
  // "0 events shown" of what the server had found.
  folded: 0,
  head: 0, // rows[0..head] were dropped already
  droppedThrough: 0, // the last sequence dropped, 0 for none
  lastSequence: 0,
  // The run's last sequence, as the last page of events said it.
  logEnd: null,
  generation: 0,
  // `?events=all`: bookkeeping rows shown too.
  allEvents: params.get("events") === "all",
  // `?seq=N` (a search hit): the timeline starts at that event.
  startAt: Number(params.get("seq") || 0),
};

// Bookkeeping: folded away unless `?events=all`.
const BOOKKEEPING = new Set(["status", "notice", "usage", "model_selected", "actor_resolved", "response"]);

// The run's own events, which agentrace writes (the run's start, its
// session's end, bytes a recorder fell behind on): no agent's, and no
// unplaced agent's either. They wore the Unknown actor badge and fell
// under the Unknown filter, where `show` counts none of them.
const RUN_OWN = new Set(["run_started", "session_ended", "dropped"]);

function isRunOwn(envelope) {
  const event = envelope.event || {};
  return RUN_OWN.has(event.type) && envelope.actor.role === "unknown" && !envelope.actor.threadId;
}

function roleBadge(actor, own) {
  if (own) return el("span", { class: "badge actor role-run", "data-thread": "", title: "the run's own event, written by agentrace" }, "agentrace");
  const span = el("span", {
    class: "badge actor role-" + actor.role,
    "data-thread": actor.threadId || "",
    title: actor.threadId || "no thread",
  }, actor.label);
  return span;
}

// The run's time, tokens and cost, as `agentrace show` gives them.
function summaryFigures(run) {
  const rows = [];
  if (run.startedAt) {
    const ended = run.endedAt
      ? ", ended " + fmtInstant(run.endedAt) + " (" + fmtSeconds(msBetween(run.startedAt, run.endedAt)) + ")"
      : run.status === "running" && run.updatedAt ? ", last line " + fmtInstant(run.updatedAt) : "";
    rows.push(el("dt", {}, "time"), el("dd", { id: "run-time" }, "started " + fmtInstant(run.startedAt) + ended));
  }
  if (run.tokens) {
    const t = run.tokens;
    rows.push(el("dt", {}, "tokens"), el("dd", { id: "run-tokens", "data-tokens": t.totalTokens },
      t.totalTokens + " total (" + t.inputTokens + " in, " + t.cachedInputTokens + " cached, " + t.outputTokens + " out, " + t.reasoningOutputTokens + " reasoning)"));
    const missing = (run.incomplete || []).join(", ");
    const why = run.costStatus === "floor"
      ? (missing ? " (a floor: tokens missing: " + missing + ")" : " (a floor: some tokens have no price)")
      : run.costStatus === "unknown" ? " (no price for its models)" : "";
    rows.push(el("dt", {}, "cost"), el("dd", { id: "run-cost", "data-cost": run.cost === null || run.cost === undefined ? "" : run.cost },
      fmtCost(run.cost, run.costStatus) + why));
  }
  return rows;
}

// Why a run has no result, as `agentrace show` says it: a bare `—` left
// a reader to guess whether it is still coming.
function noResultText(run) {
  switch (run.status) {
    case "running": return run.sessionEnded ? "none: the session ended before the root's turn did" : "none yet: the root's turn has not ended";
    case "done": return "none: the root's last turn ended without an answer of its own";
    case "failed": return "none: the root's last turn failed";
    case "interrupted": return "none: the root's last turn was interrupted";
    default: return "none";
  }
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
      el("dt", {}, "status"), el("dd", { id: "run-status" }, run.status + (run.sessionEnded ? ", but its session ended (nothing is at work)" : "") + (run.error ? ": " + run.error : "")),
      el("dt", {}, "provider"), el("dd", {}, run.provider + " (" + run.source + ")"),
      el("dt", {}, "root"), el("dd", {}, run.rootThreadId || "unknown"),
      el("dt", {}, "result"), el("dd", { id: "run-result" }, run.result !== null && run.result !== undefined && source ? run.result : noResultText(run)),
      el("dt", {}, "from"), el("dd", { id: "run-source" }, sourceText),
      ...summaryFigures(run),
      // Every blind spot `show` counts: the log lines that could not be
      // read back and the bytes a recorder that fell behind never wrote
      // were left out, so a damaged log looked whole here.
      el("dt", {}, "counts"), el("dd", {},
        countText(run.counts.events, "event", "events") + " · " + countText(run.counts.unknownActor, "message/tool event", "message/tool events") + " of unknown actor · " +
        countText(run.counts.undecodedLines, "undecoded line", "undecoded lines") + " · " + countText(run.counts.unknownFrames, "unknown frame", "unknown frames") + " · " +
        countText(run.counts.skippedLogLines || 0, "skipped log line", "skipped log lines") +
        (run.counts.droppedBytes > 0 ? " · " + countText(run.counts.droppedBytes, "byte", "bytes") + " not recorded (recorder fell behind)" : ""))));
  renderLive();
}

// Live until the session is over, by the rule `top` and `watch` share: a
// root whose turn ended while a helper or background command works on
// (Claude's run_in_background) leaves its run `done`, not its session.
function sessionLive() {
  return (view.run.status === "running" && !view.run.sessionEnded) || view.working.size > 0;
}

function noteRecord(record) {
  if (record.state === "ended") view.working.delete(record.childWorkId); else view.working.add(record.childWorkId);
  if (record.kind === "agent") view.records.set(record.providerId, record);
}

function renderLive() {
  document.getElementById("live").hidden = !sessionLive();
}

function renderWarnings(warnings) {
  const box = document.getElementById("warnings");
  clear(box);
  box.append(el("h2", {}, "Warnings (" + warnings.length + ")"));
  const list = el("ul", { id: "warning-list" });
  for (const warning of warnings) {
    const message = namedThreads(warning.message);
    // The message as recorded (thread ids and all) in the title.
    list.append(el("li", { class: "warning", "data-code": warning.code, title: message !== warning.message ? warning.message : null },
      el("span", { class: "badge sev-" + warning.severity }, warning.severity),
      el("code", {}, warning.code), " ", message));
  }
  if (!warnings.length) list.append(el("li", {}, "none"));
  box.append(list);
}

// `text` with each thread id of the run's agents said as the agent's
// label, as the rest of the page names them: an imported Codex child's
// `replayed_history` note (`the rollout of 01a2…  starts with a copy of
// 01a2…'s history`) and its copied lines' reason named raw ids.
const threadLabels = { agents: null, labels: [] };
function namedThreads(text) {
  if (!text) return text;
  // Listed once per tree (a page may name a reason per row).
  if (threadLabels.agents !== view.agents) {
    const labels = [];
    const walk = (nodes) => nodes.forEach((node) => {
      if (node.threadId && node.label && node.label !== node.threadId) labels.push([node.threadId, node.label]);
      walk(node.children || []);
    });
    walk(view.agents);
    // The longest id first, so no id is cut inside another.
    labels.sort((a, b) => b[0].length - a[0].length);
    threadLabels.agents = view.agents;
    threadLabels.labels = labels;
  }
  return threadLabels.labels.reduce((said, [threadId, label]) => said.split(threadId).join(label), String(text));
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

// An agent's tokens and cost: its live record's while it has one (it moves
// with the SSE stream), else the run view's.
function spendOf(node, record) {
  const tokens = record && record.totalTokens != null ? record.totalTokens : (node.tokens ? node.tokens.totalTokens : null);
  if (tokens === null) return "";
  const cost = record && record.costStatus ? fmtCost(record.cost, record.costStatus) : fmtCost(node.cost, node.costStatus);
  return ", " + countText(tokens, "token", "tokens") + " · " + cost;
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
      el("small", {}, countText(node.eventCount, "event", "events") + ", " + countText(node.toolCount, "tool", "tools") + spendOf(node, record)));
    if (node.role === "unknown") li.append(el("span", { class: "reason" }, "ownership unknown"));
    if (node.children && node.children.length) {
      const ul = el("ul", {});
      node.children.forEach((child) => ul.append(item(child)));
      li.append(ul);
    }
    return li;
  };
  view.agents.forEach((node) => tree.append(item(node)));
  // Tokens of no agent of the tree (Claude Code's startup warmup agents,
  // replies of unknown owner): in the run's total, so shown beside the
  // tree as `show` shows them, for the agents' figures to add up to it.
  for (const outside of view.run.outsideTree || []) {
    const parts = outside.tokensByModel || [];
    const total = parts.reduce((sum, part) => sum + part.tokens.totalTokens, 0);
    const unpriced = parts.reduce((sum, part) => sum + (part.unpricedTokens || 0), 0);
    const status = unpriced === 0 ? "exact" : unpriced >= total ? "unknown" : "floor";
    const cost = parts.reduce((sum, part) => sum + (part.cost || 0), 0);
    tree.append(el("li", { class: "outside", "data-outside": outside.label },
      el("span", { class: "label" }, outside.label), " ",
      el("small", {}, "(outside the tree), " + countText(total, "token", "tokens") + " · " + fmtCost(status === "unknown" ? null : cost, status))));
  }
}

function summaryOf(event) {
  switch (event.type) {
    case "message": return (event.role === "user" ? "user: " : "") + event.text;
    case "reasoning": return event.text;
    case "tool_use": return event.name;
    case "tool_result": return event.name + " → " + (event.status || "done");
    case "agent_spawned": return "spawned " + (labelOf(event.childThreadId) || event.childThreadId) + (event.prompt ? ": " + event.prompt : "");
    case "agent_completed": return (labelOf(event.threadId) || event.threadId) + " ended " + event.status + (event.result ? ": " + event.result : "");
    case "agent_wait_started": return "waits for its helpers";
    case "turn_started": return "turn " + event.turnId;
    case "turn_completed": return "turn " + event.turnId + " " + event.status + (event.error ? ": " + event.error : "");
    case "done": return "done: " + (event.result || "(no result)");
    case "failed": case "interrupted": return event.type + (event.error ? ": " + event.error : "");
    case "warning": return event.warning.code + ": " + namedThreads(event.warning.message);
    case "error": return event.message;
    case "actor_resolved": return "now known as " + event.actor.label;
    case "unknown": return event.reason;
    case "delta": return event.text;
    default: return "";
  }
}

// True for an event that went wrong: a failed tool, a non-zero exit, an
// error, a failed turn or run.
function isFailure(event) {
  switch (event.type) {
    case "tool_result":
      return (event.exitCode !== null && event.exitCode !== undefined && event.exitCode !== 0) ||
        ["failed", "error", "declined"].includes(event.status);
    case "turn_completed": return Boolean(event.error) || event.status === "failed";
    case "agent_completed": return event.status === "failed";
    case "error": case "failed": return true;
    default: return false;
  }
}

// What a row shows under its summary: a tool's input, output, exit status
// and duration; a message's whole text (as text, never HTML).
function rowDetail(event) {
  if (event.type === "tool_use") {
    return el("pre", { class: "tool-input" }, event.input || "");
  }
  if (event.type === "tool_result") {
    const facts = [];
    if (event.exitCode !== null && event.exitCode !== undefined) facts.push("exit " + event.exitCode);
    if (event.durationMs !== null && event.durationMs !== undefined) facts.push(fmtDuration(event.durationMs));
    // No facts, no line for them: an empty one stood above the output of
    // every result without an exit code or duration (an agent tool's).
    const box = el("div", { class: "tool-output" }, facts.length ? el("span", { class: "facts" }, facts.join(" · ")) : null);
    if (event.output) box.append(el("pre", {}, event.output));
    return box.firstChild ? box : null;
  }
  return null;
}

function eventRow(envelope) {
  const event = envelope.event || {};
  const actor = envelope.actor;
  const raw = el("pre", { class: "raw", hidden: true });
  const toggle = el("button", { class: "raw-toggle", onclick: () => {
    // An imported frame whose source changed or vanished since the import:
    // why it is not shown (the attributed event above is kept whole).
    if (!raw.firstChild) raw.textContent = envelope.rawUnavailable
      ? "raw frame unavailable: " + envelope.rawUnavailable + " (" + (envelope.rawRef ? envelope.rawRef.path : "its source") + "); the event above was kept at import"
      : JSON.stringify(envelope.raw !== undefined ? envelope.raw : envelope, null, 2);
    raw.hidden = !raw.hidden;
  } }, "raw");
  const failed = isFailure(event);
  const own = isRunOwn(envelope);
  const row = el("li", { class: "event type-" + (event.type || "unknown") + (failed ? " failed" : ""), "data-seq": envelope.sequence, "data-type": event.type, "data-thread": actor.threadId || "" },
    el("span", { class: "seq" }, "#" + envelope.sequence),
    roleBadge(actor, own),
    el("span", { class: "type" }, event.type || "?"),
    el("span", { class: "text" }, summaryOf(event)), " ", toggle);
  if (actor.role === "unknown" && !own) {
    row.append(el("span", { class: "reason" }, namedThreads(actor.reason) || (actor.threadId ? "thread not linked to a spawner" : "provider event had no thread id")));
  }
  const detail = rowDetail(event);
  if (detail) row.append(detail);
  row.append(raw);
  return row;
}

function laneFor(threadId, parentThreadId) {
  let lane = view.lanes.get(threadId);
  if (lane) return lane;
  const parent = (parentThreadId && view.lanes.get(parentThreadId)) || document.getElementById("timeline");
  lane = el("ol", { class: "lane", "data-lane": threadId });
  // A helper's lane folds from the keyboard too: Tab reaches its head,
  // Enter or Space folds or unfolds it (it answered the pointer only).
  const toggle = () => head.setAttribute("aria-expanded", String(!lane.classList.toggle("collapsed")));
  const head = el("li", { class: "lane-head", tabindex: "0", role: "button", "aria-expanded": "true", onclick: toggle },
    "▸ " + (labelOf(threadId) || threadId));
  head.addEventListener("keydown", (event) => {
    if (event.key !== "Enter" && event.key !== " ") return;
    event.preventDefault();
    toggle();
  });
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
  // A folded row is not in the DOM (what it says still applies).
  // The Unknown filter keeps the provider's events no agent owns, not the
  // run's own (the API's `actor=unknown` has both, as `events --actor`).
  const filteredOut = view.actor === "unknown" && isRunOwn(envelope);
  if ((view.allEvents || !BOOKKEEPING.has(event.type)) && !filteredOut) {
    const row = eventRow(envelope);
    if (envelope.sequence === view.startAt) row.classList.add("target");
    container.append(row);
    view.rows.push({ row, sequence: envelope.sequence });
  } else if (!filteredOut) {
    view.folded += 1;
  }
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

function resetTimeline(at) {
  view.generation += 1;
  // A page still on its way belongs to the old timeline: its answer is
  // dropped (by generation), so it must not hold the next one back.
  view.loading = false;
  view.startAt = typeof at === "number" ? at : 0;
  view.next = view.startAt > 1 ? view.startAt - 1 : 0;
  view.done = false;
  view.lanes = new Map();
  view.rows = [];
  view.folded = 0;
  view.head = 0;
  view.droppedThrough = 0;
  document.getElementById("earlier").hidden = view.next === 0;
  if (view.next > 0) {
    view.droppedThrough = view.next;
    document.getElementById("earlier-text").textContent = "Events up to #" + view.next + " are not shown.";
  }
  clear(document.getElementById("timeline"));
  return loadMore();
}

// Shows event `sequence` in the timeline: scrolls to its row, or starts
// the timeline there when it is not on the page.
async function scrollToEvent(sequence) {
  let row = document.querySelector('#timeline .event[data-seq="' + sequence + '"]');
  if (!row) {
    await resetTimeline(sequence);
    row = document.querySelector('#timeline .event[data-seq="' + sequence + '"]');
  }
  // An event past the run's last as the page just fetched says it (a
  // stale or mistyped `?seq=`): said, and the run shown from its start,
  // where the page was an empty timeline under "Events up to #99998 are
  // not shown". A live run's newer event was fetched above.
  if (!row && view.logEnd !== null && sequence > view.logEnd) {
    showError("event #" + sequence + " is not in this run: its events are #1 to #" + view.logEnd);
    await resetTimeline();
    return;
  }
  if (!row && !view.allEvents) {
    // A folded (bookkeeping) event, asked for: every event is shown.
    document.getElementById("show-all").click();
    await resetTimeline(sequence);
    row = document.querySelector('#timeline .event[data-seq="' + sequence + '"]');
  }
  document.querySelectorAll("#timeline .event.target").forEach((node) => node.classList.remove("target"));
  if (row) {
    row.classList.add("target");
    row.scrollIntoView({ block: "center" });
  }
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
    view.logEnd = page.lastSequence;
    page.events.forEach(placeEvent);
    dropOldRows();
    view.next = page.next === null ? (page.events.length ? page.events[page.events.length - 1].sequence : view.next) : page.next;
    view.done = page.next === null;
    document.getElementById("load-more").hidden = view.done;
    const shown = document.querySelectorAll("#timeline .event").length;
    // A search says what it found among the folded rows, and how to see it.
    const folded = view.q && view.folded
      ? " · " + countText(view.folded, "match", "matches") + " among the folded bookkeeping events (Show all events)"
      : "";
    document.getElementById("status-line").textContent =
      countText(shown, "event", "events") + " shown" + folded + (view.done ? "" : " · more below");
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
    records.forEach(noteRecord);
  } catch (error) {
    showError(error);
  }
  renderLive();
  renderTree();
}

async function showRun(id) {
  nav("");
  view.id = id;
  document.getElementById("run-view").hidden = false;
  await loadRun(id);
  const toggle = document.getElementById("show-all");
  const label = () => { toggle.textContent = view.allEvents ? "Fold bookkeeping" : "Show all events"; toggle.classList.toggle("on", view.allEvents); };
  label();
  toggle.addEventListener("click", () => {
    view.allEvents = !view.allEvents;
    const query = new URLSearchParams(location.search);
    if (view.allEvents) query.set("events", "all"); else query.delete("events");
    query.delete("seq");
    history.replaceState(null, "", location.pathname + (query.toString() ? "?" + query : ""));
    label();
    resetTimeline();
  });
  // The waterfall draws while the timeline answers: the page is usable
  // (`data-ready`) once its first page of events is shown.
  drawWaterfall();
  await resetTimeline(view.startAt);
  if (view.startAt) scrollToEvent(view.startAt);
  initWaterfallControls();
  document.querySelectorAll("#filters button").forEach((button) => button.addEventListener("click", () => {
    document.querySelectorAll("#filters button").forEach((b) => b.classList.toggle("on", b === button));
    view.actor = button.getAttribute("data-actor");
    resetTimeline();
  }));
  document.getElementById("collapse").addEventListener("click", (event) => {
    const lanes = document.querySelectorAll(".lane");
    const collapse = !Array.from(lanes).every((lane) => lane.classList.contains("collapsed"));
    lanes.forEach((lane) => {
      lane.classList.toggle("collapsed", collapse);
      const head = lane.querySelector(":scope > .lane-head");
      if (head) head.setAttribute("aria-expanded", String(!collapse));
    });
    event.target.textContent = collapse ? "Expand helpers" : "Collapse helpers";
  });
  let timer = null;
  document.getElementById("search").addEventListener("input", (event) => {
    clearTimeout(timer);
    timer = setTimeout(() => { view.q = event.target.value.trim(); resetTimeline(); }, 250);
  });
  document.getElementById("load-more").addEventListener("click", loadMore);
  document.getElementById("back-to-start").addEventListener("click", () => resetTimeline());
  new IntersectionObserver((entries) => {
    if (entries.some((entry) => entry.isIntersecting)) loadMore();
  }).observe(document.getElementById("more"));
  if (sessionLive()) follow(id);
}

function follow(id) {
  const source = new EventSource(withToken("/api/runs/" + encodeURIComponent(id) + "/stream?after=" + view.run.counts.events));
  source.addEventListener("envelope", (message) => {
    const envelope = JSON.parse(message.data);
    // Only a timeline that has everything up to here takes live rows; a
    // filtered or partly loaded one gets them when it pages on.
    scheduleWaterfall();
    if (view.done && envelope.sequence > view.lastSequence) {
      if (view.actor === "all" && !view.q) { placeEvent(envelope); dropOldRows(); view.next = envelope.sequence; }
      else view.done = false;
    }
  });
  source.addEventListener("record", (message) => {
    const { record } = JSON.parse(message.data);
    noteRecord(record);
    renderLive();
    renderTree();
  });
  source.addEventListener("warnings", (message) => renderWarnings(JSON.parse(message.data)));
  source.addEventListener("run", (message) => {
    const detail = JSON.parse(message.data);
    view.run = detail.run;
    view.agents = detail.agents;
    renderSummary();
    renderTree();
    scheduleWaterfall();
  });
}

// ----- the waterfall -----------------------------------------------------------

// One lane per agent (under its spawner), its turns and tool calls as bars
// on one time axis. The server merges the bars narrower than a pixel of
// the width asked for, so a long run draws a bounded number of bars.
const LANE_HEIGHT = 22;
const NAME_WIDTH = 240;

const fall = {
  data: null,
  from: 0,
  to: null, // null: the whole run
  drawing: false,
  again: false,
  timer: null,
};

function trackWidth() {
  const box = document.getElementById("waterfall");
  return Math.max(200, Math.floor(box.clientWidth - NAME_WIDTH));
}

async function drawWaterfall() {
  if (fall.drawing) { fall.again = true; return; }
  fall.drawing = true;
  // How long asking and drawing took (scripts/bench-viewer reads it).
  const began = performance.now();
  try {
    const width = trackWidth();
    const query = new URLSearchParams({ width: String(width), from: String(fall.from) });
    if (fall.to !== null) query.set("to", String(fall.to));
    fall.data = await api("/api/runs/" + encodeURIComponent(view.id) + "/waterfall?" + query);
    renderWaterfall(width);
    document.getElementById("waterfall").setAttribute("data-draw-ms", Math.round(performance.now() - began));
  } catch (error) {
    showError(error);
  } finally {
    fall.drawing = false;
    if (fall.again) { fall.again = false; drawWaterfall(); }
  }
}

// A live run's waterfall grows: new envelopes on the stream ask for it
// again, at most once a second.
function scheduleWaterfall() {
  if (fall.timer) return;
  fall.timer = setTimeout(() => { fall.timer = null; drawWaterfall(); }, 1000);
}

function barTitle(bar) {
  const lines = [];
  const kind = bar.kind === "turn" ? "turn " + bar.name : (bar.kind === "wait" ? "wait: " : "") + bar.name;
  lines.push(kind + (bar.count > 1 ? " (" + bar.count + " merged)" : ""));
  if (bar.input) lines.push(bar.input.length > 300 ? bar.input.slice(0, 300) + "…" : bar.input);
  lines.push(bar.endMs === null || bar.endMs === undefined ? "running for " + fmtDuration(fall.data.spanMs - bar.startMs) : fmtDuration(bar.endMs - bar.startMs));
  if (bar.tokens !== null && bar.tokens !== undefined) lines.push(tokensText(bar.tokens));
  const outcome = [bar.outcome, bar.exitCode !== null && bar.exitCode !== undefined ? "exit " + bar.exitCode : null, bar.error].filter(Boolean).join(" · ");
  if (outcome) lines.push(outcome);
  return lines;
}

function showTooltip(bar, x, y) {
  const tip = document.getElementById("tooltip");
  clear(tip);
  barTitle(bar).forEach((line, index) => tip.append(el(index ? "div" : "strong", {}, line)));
  tip.hidden = false;
  tip.style.left = Math.min(x + 12, window.innerWidth - 320) + "px";
  tip.style.top = (y + 14) + "px";
}

function hideTooltip() {
  document.getElementById("tooltip").hidden = true;
}

function renderWaterfall(width) {
  const data = fall.data;
  const box = document.getElementById("waterfall");
  clear(box);
  const from = fall.from;
  const to = fall.to === null ? Math.max(1, data.spanMs) : fall.to;
  const span = Math.max(1, to - from);
  const x = (ms) => ((ms - from) / span) * width;
  box.setAttribute("data-from-ms", from);
  box.setAttribute("data-to-ms", to);
  box.setAttribute("data-track-width", width);
  // The axis: about one tick per 100 px, on round figures.
  const axis = el("div", { class: "wf-axis" }, el("div", { class: "wf-name" }, fmtDuration(span) + " shown"));
  const ticks = el("div", { class: "wf-track wf-ticks" });
  ticks.style.width = width + "px";
  const step = niceStep(span / Math.max(1, Math.floor(width / 100)));
  for (let at = Math.ceil(from / step) * step; at <= to; at += step) {
    const tick = el("span", { class: "wf-tick" }, fmtDuration(at));
    tick.style.left = x(at) + "px";
    ticks.append(tick);
  }
  axis.append(ticks);
  box.append(axis);
  const lanes = el("div", { class: "wf-lanes" });
  const index = new Map();
  data.lanes.forEach((lane, i) => {
    index.set(lane.threadId, i);
    const name = el("div", { class: "wf-name", title: lane.label + " · " + lane.threadId },
      el("span", { class: "badge role-" + lane.role }, lane.role === "root" ? "root" : lane.role === "helper" ? "helper" : "?"),
      el("span", { class: "wf-label" }, lane.label),
      el("small", {}, " " + fmtTokens(lane.tokens) + " · " + fmtCost(lane.cost)));
    name.style.paddingLeft = (4 + lane.depth * 14) + "px";
    // Exactly the width the bars were placed for.
    const track = el("div", { class: "wf-track" });
    track.style.width = width + "px";
    const row = el("div", { class: "wf-lane", "data-lane": lane.threadId, "data-thread-id": lane.threadId, "data-depth": lane.depth, "data-label": lane.label }, name, track);
    lanes.append(row);
  });
  const rows = lanes.children;
  for (const bar of data.bars) {
    const i = index.get(bar.threadId);
    if (i === undefined) continue;
    const open = bar.endMs === null || bar.endMs === undefined;
    const left = Math.max(0, x(bar.startMs));
    const right = open ? width : Math.min(width, x(bar.endMs));
    const node = el("div", {
      class: "wf-bar kind-" + bar.kind + (open ? " open" : "") + (bar.count > 1 ? " merged" : "") + (isFailedBar(bar) ? " failed" : ""),
      "data-bar": "",
      "data-kind": bar.kind,
      "data-thread-id": bar.threadId,
      "data-start-ms": bar.startMs,
      "data-end-ms": open ? "" : bar.endMs,
      "data-sequence": bar.sequence,
      "data-count": bar.count,
    });
    node.style.left = left + "px";
    node.style.width = Math.max(1, right - left) + "px";
    node.addEventListener("mousemove", (event) => showTooltip(bar, event.clientX, event.clientY));
    node.addEventListener("mouseenter", (event) => showTooltip(bar, event.clientX, event.clientY));
    node.addEventListener("mouseleave", hideTooltip);
    node.addEventListener("click", () => scrollToEvent(bar.sequence));
    // Reached with the keyboard as well as the pointer: Tab comes to the
    // waterfall's first bar once (not to each of hundreds), the arrows go
    // from bar to bar, focus shows what hovering shows, and Enter or Space
    // does what a click does.
    node.tabIndex = -1;
    node.setAttribute("role", "button");
    node.setAttribute("aria-label", barTitle(bar).join(", "));
    node.addEventListener("focus", () => { const box = node.getBoundingClientRect(); showTooltip(bar, box.left, box.bottom - 14); });
    node.addEventListener("blur", hideTooltip);
    node.addEventListener("keydown", (event) => barKey(event, node, bar));
    rows[i].lastChild.append(node);
  }
  // Spawn and wait links: a line from the spawner's (waiter's) lane to the
  // child's, at the moment.
  for (const link of data.links) {
    const a = index.get(link.fromThreadId);
    const b = index.get(link.toThreadId);
    if (a === undefined || b === undefined || link.atMs < from || link.atMs > to) continue;
    const top = Math.min(a, b) * LANE_HEIGHT + LANE_HEIGHT / 2;
    const node = el("div", { class: "wf-link link-" + link.kind, "data-link": link.kind, "data-from": link.fromThreadId, "data-to": link.toThreadId, "data-sequence": link.sequence });
    node.style.left = (NAME_WIDTH + x(link.atMs)) + "px";
    node.style.top = top + "px";
    node.style.height = Math.max(2, Math.abs(b - a) * LANE_HEIGHT) + "px";
    lanes.append(node);
  }
  box.append(lanes);
  const first = box.querySelector("[data-bar]");
  if (first) first.tabIndex = 0;
  box.setAttribute("data-bars", data.bars.length);
  document.getElementById("wf-status").textContent = countText(data.lanes.length, "agent", "agents") + " · " + countText(data.bars.length, "bar", "bars") +
    (data.bars.some((bar) => bar.count > 1) ? " (short ones merged)" : "");
}

// A key on a focused bar: Enter or Space opens its event, the arrows move
// to the bar before or after it (lane by lane, in time order).
function barKey(event, node, bar) {
  if (event.key === "Enter" || event.key === " ") {
    event.preventDefault();
    scrollToEvent(bar.sequence);
    return;
  }
  const step = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 }[event.key];
  if (!step) return;
  event.preventDefault();
  const bars = Array.from(document.querySelectorAll("#waterfall [data-bar]"));
  const next = bars[bars.indexOf(node) + step];
  if (!next) return;
  node.tabIndex = -1;
  next.tabIndex = 0;
  next.focus();
}

function isFailedBar(bar) {
  return Boolean(bar.error) || (bar.exitCode !== null && bar.exitCode !== undefined && bar.exitCode !== 0) ||
    ["failed", "error", "declined", "interrupted"].includes(bar.outcome);
}

function niceStep(raw) {
  const power = Math.pow(10, Math.floor(Math.log10(Math.max(1, raw))));
  for (const factor of [1, 2, 5, 10]) if (power * factor >= raw) return power * factor;
  return power * 10;
}

// Zoom: in and out around the middle of what is shown (or the pointer, with
// the wheel), and back to the whole run.
function zoom(factor, centerMs) {
  const span = fall.data ? fall.data.spanMs : 0;
  const to = fall.to === null ? span : fall.to;
  const center = centerMs === undefined ? (fall.from + to) / 2 : centerMs;
  const half = Math.max(5, ((to - fall.from) * factor) / 2);
  let from = Math.max(0, Math.round(center - half));
  let end = Math.round(center + half);
  if (end >= span) { end = span; }
  if (from <= 0 && end >= span) { fall.from = 0; fall.to = null; } else { fall.from = from; fall.to = Math.max(from + 1, end); }
  drawWaterfall();
}

function initWaterfallControls() {
  document.getElementById("zoom-in").addEventListener("click", () => zoom(0.5));
  document.getElementById("zoom-out").addEventListener("click", () => zoom(2));
  document.getElementById("zoom-reset").addEventListener("click", () => { fall.from = 0; fall.to = null; drawWaterfall(); });
  document.getElementById("waterfall").addEventListener("wheel", (event) => {
    if (!event.ctrlKey && !event.altKey) return;
    event.preventDefault();
    const box = document.getElementById("waterfall");
    const offset = event.clientX - box.getBoundingClientRect().left - NAME_WIDTH;
    const from = Number(box.getAttribute("data-from-ms"));
    const to = Number(box.getAttribute("data-to-ms"));
    const at = from + (Math.max(0, offset) / Number(box.getAttribute("data-track-width"))) * (to - from);
    zoom(event.deltaY < 0 ? 0.5 : 2, at);
  }, { passive: false });
  let resize = null;
  window.addEventListener("resize", () => { clearTimeout(resize); resize = setTimeout(drawWaterfall, 200); });
}

// ----- usage charts ----------------------------------------------------------------

const SVG = "http://www.w3.org/2000/svg";

// An SVG element; text only ever through textContent.
function svg(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
  if (text !== undefined) node.textContent = String(text);
  return node;
}

const PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"];

// A stacked bar chart: one bar per day, one segment per key.
function stackedChart(id, days, group, measure, format) {
  const box = document.getElementById(id);
  clear(box);
  // Nothing counted yet: said, where an empty chart's axis read `1e-9`
  // (the floor of its scale, printed).
  if (!days.length) {
    box.append(el("p", { class: "empty" }, "No usage recorded yet: `agentrace import` reads your Codex and Claude Code history."));
    return;
  }
  const keys = [];
  for (const day of days) for (const key of Object.keys(day[group] || {})) if (!keys.includes(key)) keys.push(key);
  keys.sort();
  const value = (counters) => measure === "cost" ? (counters.cost || 0) : counters.totalTokens;
  const max = Math.max(1e-9, ...days.map((day) => value(day.totals)));
  const width = Math.max(320, days.length * 36 + 60);
  const height = 160;
  const chart = svg("svg", { width, height: height + 40, class: "chart", role: "img" });
  const barWidth = 24;
  days.forEach((day, i) => {
    let y = height;
    const left = 50 + i * 36;
    for (const key of keys) {
      const counters = (day[group] || {})[key];
      if (!counters) continue;
      const v = value(counters);
      const h = (v / max) * (height - 10);
      y -= h;
      const rect = svg("rect", { x: left, y, width: barWidth, height: Math.max(0, h), fill: PALETTE[keys.indexOf(key) % PALETTE.length], "data-day": day.day, "data-key": key, "data-value": v });
      // A segment's figure with what is known of it: `$?` for a model
      // without a price (its bar is 0 high, never "$0.0000"), `≥` for a floor.
      rect.append(svg("title", {}, day.day + " · " + key + " · " + format(v, counters)));
      chart.append(rect);
    }
    chart.append(svg("text", { x: left + barWidth / 2, y: height + 14, "text-anchor": "middle", class: "axis" }, day.day.slice(5)));
  });
  chart.append(svg("text", { x: 2, y: 12, class: "axis" }, format(max > 1e-9 ? max : 0)));
  box.append(chart);
  const legend = el("ul", { class: "legend" });
  keys.forEach((key, i) => {
    const swatch = el("span", { class: "swatch" });
    swatch.style.background = PALETTE[i % PALETTE.length];
    legend.append(el("li", { "data-key": key }, swatch, key));
  });
  box.append(legend);
}

async function showUsage() {
  nav("/usage");
  document.getElementById("usage-view").hidden = false;
  const report = await apiInZone("/api/usage");
  zoneHeads();
  const draw = () => {
    const group = document.getElementById("usage-by").value === "model" ? "models" : "providers";
    stackedChart("chart-tokens", report.days, group, "tokens", fmtTokens);
    stackedChart("chart-cost", report.days, group, "cost", (v, counters) => counters ? fmtCost(counters.costStatus === "unknown" ? null : counters.cost, counters.costStatus) : fmtCost(v));
  };
  document.getElementById("usage-by").addEventListener("change", draw);
  draw();
  const totals = report.totals;
  const line = document.getElementById("usage-totals");
  line.setAttribute("data-tokens", totals.totalTokens);
  line.setAttribute("data-cost", totals.cost === null ? "" : totals.cost);
  line.textContent = tokensText(totals.totalTokens) + " · " + fmtCost(totals.cost, totals.costStatus) + " over " + countText(report.days.length, "day", "days") + " (" + ZONE + ")";
  const runs = document.querySelector("#top-runs tbody");
  clear(runs);
  for (const run of report.topRuns) {
    runs.append(el("tr", { "data-run-id": run.runId || "", "data-tokens": run.counters.totalTokens, "data-cost": run.counters.cost === null ? "" : run.counters.cost },
      el("td", {}, run.runId ? el("a", { href: withToken("/runs/" + encodeURIComponent(run.runId)) }, run.runId) : run.sessionId),
      el("td", {}, run.provider),
      el("td", {}, fmtTime(run.startedAt)),
      el("td", { class: "num" }, fmtTokens(run.counters.totalTokens)),
      el("td", { class: "num" }, fmtCost(run.counters.cost, run.counters.costStatus))));
  }
  const agents = document.querySelector("#top-agents tbody");
  clear(agents);
  for (const agent of report.topAgents) {
    agents.append(el("tr", { "data-label": agent.label, "data-tokens": agent.counters.totalTokens, "data-cost": agent.counters.cost === null ? "" : agent.counters.cost },
      el("td", { class: "label" }, agent.label),
      el("td", { class: "num" }, agent.agents),
      el("td", { class: "num" }, fmtTokens(agent.counters.totalTokens)),
      el("td", { class: "num" }, fmtCost(agent.counters.cost, agent.counters.costStatus))));
  }
}

// ----- live: every session at a glance, as `agentrace top` shows it --------

// Read again this often while the tab is shown.
const LIVE_FOLLOW_MS = 2000;
const liveView = { follow: null, sessions: [], now: null };

// `running`, `done`, … or `helpers working` while helpers work on after the
// root's turn ended (as `top` says it).
function sessionStatus(session) {
  return session.live && session.run.status !== "running" ? "helpers working" : session.run.status;
}

// A time as `agentrace top` prints it (`status::duration`): the largest
// two units that fit (`850ms`, `4.2s`, `3m05s`, `2h10m`, `5d06h`). The
// page read `169 h 7 min` beside top's `7d01h`.
function fmtTopDuration(ms) {
  if (ms === null || ms === undefined || !isFinite(ms)) return "—";
  const millis = Math.max(0, Math.round(ms));
  const two = (n) => String(n).padStart(2, "0");
  if (millis < 1000) return millis + "ms";
  if (millis < 60000) return tenthsText(millis) + "s";
  if (millis < 3600000) return Math.floor(millis / 60000) + "m" + two(Math.floor(millis / 1000) % 60) + "s";
  if (millis < 86400000) return Math.floor(millis / 3600000) + "h" + two(Math.floor(millis / 60000) % 60) + "m";
  return Math.floor(millis / 86400000) + "d" + two(Math.floor(millis / 3600000) % 24) + "h";
}

// Time from `at` to the server's now, as `top` gives it.
function since(at, now) {
  return fmtTopDuration(msBetween(at, now));
}

function liveAgentRow(agent, now) {
  const label = el("td", { class: "label" }, agent.label);
  label.style.paddingLeft = (4 + agent.depth * 16) + "px";
  const tool = agent.tool
    ? el("span", { title: agent.tool.input }, agent.tool.name + " " + since(agent.tool.since, now), agent.tool.input ? el("span", { class: "tool-input" }, " " + agent.tool.input.slice(0, 80)) : null)
    : "";
  const cost = agent.costStatus ? fmtTopCost(agent.cost, agent.costStatus) : "";
  // Quiet past the limit (`silent_agent`): maybe stuck.
  const rowClass = [agent.live ? "agent-live" : null, agent.silent ? "agent-silent" : null].filter(Boolean).join(" ") || null;
  return el("tr", { class: rowClass, title: agent.silent ? "no activity for longer than the limit: maybe stuck" : null, "data-agent-row": "", "data-thread-id": agent.threadId, "data-depth": agent.depth, "data-state": agent.state, "data-live": String(agent.live), "data-silent": String(Boolean(agent.silent)), "data-command": String(agent.command) },
    label,
    el("td", { class: "state" }, agent.state),
    el("td", { class: "tool" }, tool),
    el("td", { class: "num" }, agent.tokens === undefined ? "" : fmtTokens(agent.tokens)),
    el("td", { class: "num" }, cost),
    el("td", { class: "num silent" }, agent.live && agent.heardAt ? since(agent.heardAt, now) : ""));
}

function renderLiveSessions() {
  const only = document.getElementById("live-filter").value === "live";
  const box = document.getElementById("live-sessions");
  clear(box);
  const shown = liveView.sessions.filter((session) => !only || session.live);
  const live = liveView.sessions.filter((session) => session.live).length;
  document.getElementById("live-summary").textContent = live + " live, " + (liveView.sessions.length - live) + " ended";
  if (!shown.length) {
    box.append(el("p", { class: "empty" }, only ? "No session is live." : "No sessions yet: `agentrace serve --watch` follows your Codex and Claude Code folders."));
    return;
  }
  for (const session of shown) {
    const run = session.run;
    const status = sessionStatus(session);
    const agents = session.agents.filter((agent) => !agent.command).length;
    const meta = [run.provider, run.startedAt ? "started " + since(run.startedAt, liveView.now) + " ago" : null, countText(agents, "agent", "agents"),
      // Before its first request a run has no tokens and no cost either
      // (as `top` leaves both out).
      run.tokens ? tokensText(run.tokens.totalTokens) : null, run.tokens ? fmtTopCost(run.cost, run.costStatus) : null, problemsText(run)].filter(Boolean).join(" · ");
    const table = el("table", { class: "live-agents" },
      el("thead", {}, el("tr", {}, ...["agent", "state", "tool now", "tokens", "cost", "silent"].map((head) => el("th", {}, head)))),
      el("tbody", {}, ...session.agents.map((agent) => liveAgentRow(agent, liveView.now))));
    box.append(el("section", { class: "live-session" + (session.live ? " is-live" : ""), "data-live-session": run.id, "data-live": String(session.live), "data-status": status },
      el("h2", {}, el("a", { href: withToken("/runs/" + encodeURIComponent(run.id)) }, run.id), " ", el("span", { class: "badge status-" + status.replace(/ /g, "-") }, status), " ", el("span", { class: "meta" }, meta)),
      table));
  }
}

async function loadLive() {
  clearTimeout(liveView.follow);
  try {
    const answer = await api("/api/live");
    liveView.sessions = answer.sessions;
    liveView.now = answer.now;
    renderLiveSessions();
  } finally {
    liveView.follow = setTimeout(function tick() {
      if (document.hidden) {
        liveView.follow = setTimeout(tick, LIVE_FOLLOW_MS);
        return;
      }
      loadLive().catch(showError);
    }, LIVE_FOLLOW_MS);
  }
}

async function showLive() {
  nav("/live");
  document.getElementById("live-view").hidden = false;
  document.getElementById("live-filter").addEventListener("change", renderLiveSessions);
  await loadLive();
}

// ----- compare two runs -----------------------------------------------------------------

function figureCells(figures, changed) {
  const mark = (name, text) => el("td", { class: "num" + (changed.includes(name) ? " changed" : ""), "data-field": name }, text);
  if (!figures) return [el("td", { class: "absent", colspan: 8 }, "—")];
  const warnings = el("td", { class: "warnings" + (changed.includes("warnings") ? " changed" : ""), "data-field": "warnings" });
  for (const code of figures.warnings || []) warnings.append(el("span", { class: "badge warn", "data-code": code, title: code }, code));
  if (!(figures.warnings || []).length) warnings.append("—");
  const tools = Object.entries(figures.toolCalls).map(([name, count]) => name + "×" + count).join(" ");
  return [
    mark("status", figures.status),
    mark("turns", figures.turns),
    mark("toolCalls", tools || "—"),
    // Whole, as `diff` prints them: 55,350 and 55,321 both read `55k`,
    // marked as differing.
    mark("tokens", figures.tokens === null || figures.tokens === undefined ? "?" : String(figures.tokens)),
    // A floor as `diff` and `show` print it (`≥`), from the figures'
    // `costStatus`: a floor read as the whole figure beside an exact one.
    mark("cost", fmtCost(figures.costStatus === "unknown" ? null : figures.cost, figures.costStatus)),
    mark("durationMs", fmtDiffSeconds(figures.durationMs)),
    warnings,
    el("td", { class: "result" + (changed.includes("result") ? " changed" : ""), "data-field": "result", title: figures.result || "" }, figures.result ? figures.result.slice(0, 200) : "—"),
  ];
}

async function showCompare() {
  nav("/compare");
  document.getElementById("compare-view").hidden = false;
  const a = params.get("a") || "";
  const b = params.get("b") || "";
  document.getElementById("compare-a").value = a;
  document.getElementById("compare-b").value = b;
  document.getElementById("compare-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const query = new URLSearchParams({ a: document.getElementById("compare-a").value.trim(), b: document.getElementById("compare-b").value.trim() });
    if (token) query.set("token", token);
    location.href = "/compare?" + query;
  });
  if (!a || !b) return;
  const result = await api("/api/compare?a=" + encodeURIComponent(a) + "&b=" + encodeURIComponent(b));
  const head = document.querySelector("#compare-table thead");
  clear(head);
  const columns = ["status", "turns", "tools", "tokens", "cost", "duration", "warnings", "result"];
  head.append(el("tr", {}, el("th", {}, "agent"), el("th", {}, ""), ...columns.map((c) => el("th", {}, c))));
  const body = document.querySelector("#compare-table tbody");
  clear(body);
  const runChanged = result.differences.filter((d) => d.agent === null || d.agent === undefined).map((d) => d.field);
  const runRow = (side, run) => el("tr", { class: "run-row", "data-side": side }, el("td", {}, el("a", { href: withToken("/runs/" + encodeURIComponent(run.id)) }, run.id)), el("td", {}, side.toUpperCase()), ...figureCells(run.figures, runChanged));
  body.append(runRow("a", result.a), runRow("b", result.b));
  for (const pair of result.agents) {
    const only = pair.only ? "only in " + pair.only.toUpperCase() : "";
    const attrs = { class: "agent-pair" + (pair.only ? " only only-" + pair.only : "") + (pair.changed.length ? " differs" : ""), "data-agent": pair.label, "data-role": pair.role, "data-only": pair.only || "" };
    const label = el("td", { rowspan: 2, class: "label" }, el("span", { style: null }, "  ".repeat(pair.depth)), el("span", { class: "badge role-" + pair.role }, pair.role), el("span", { class: "name" }, pair.label), only ? el("span", { class: "badge only-badge" }, only) : null);
    label.style.paddingLeft = (4 + pair.depth * 14) + "px";
    body.append(el("tr", attrs, label, el("td", {}, "A"), ...figureCells(pair.a, pair.changed)));
    body.append(el("tr", Object.assign({}, attrs, { class: attrs.class + " side-b" }), el("td", {}, "B"), ...figureCells(pair.b, pair.changed)));
  }
  const summary = document.getElementById("compare-summary");
  summary.setAttribute("data-differences", result.differences.length);
  summary.textContent = result.differences.length ? countText(result.differences.length, "difference", "differences") : "no differences";
}

async function main() {
  const match = location.pathname.match(/^\/runs\/([^/]+)$/);
  try {
    if (match) await showRun(decodeURIComponent(match[1]));
    else if (location.pathname === "/usage") await showUsage();
    else if (location.pathname === "/live") await showLive();
    else if (location.pathname === "/compare") await showCompare();
    else await showRuns();
    // Since the navigation began (scripts/bench-viewer reads it).
    document.body.setAttribute("data-ready-ms", Math.round(performance.now()));
    document.body.setAttribute("data-ready", "true");
  } catch (error) {
    showError(error);
  }
}

main();
