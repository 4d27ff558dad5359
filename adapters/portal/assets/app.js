// The reqlog customer portal. It reads its session token from the URL fragment
// (never sent to a server), keeps it for this tab only, and calls the API's read
// endpoints with it. Filters and the open message live in the query string (never
// the token), so reload, back and forward keep them and a link can point at one
// message. Everything that comes from a message is written with textContent,
// never parsed as HTML. The chart is uPlot (portal/uplot.js, a global).

const PAGE_SIZE = 20;
const TOKEN_KEY = "reqlog.portal.token";
const API = new URL("v1/messages", document.baseURI);
const STATS = new URL("v1/stats", document.baseURI);
const EXPORT = new URL("v1/messages/export", document.baseURI);
const ALERTS = new URL("v1/alerts/states", document.baseURI);

// Query parameters the page keeps in its URL; "range" is a preset (or "custom"
// for from/to), "message" the open message.
const URL_PARAMS = ["q", "name", "status_code", "method", "path", "path_prefix", "route", "min_duration_ms", "range", "from", "to", "message"];
const RANGES = { "1h": 3600e3, "24h": 86400e3, "7d": 7 * 86400e3, "30d": 30 * 86400e3 };
const DEFAULT_RANGE = "24h";
// Bottom to top of each stacked bar; Okabe-Ito colours, told apart by readers
// with any common colour-vision deficiency.
const CLASSES = [
  { key: "2xx", color: "#009E73" },
  { key: "3xx", color: "#56B4E9" },
  { key: "4xx", color: "#E69F00" },
  { key: "5xx", color: "#D55E00" },
  { key: "1xx", color: "#999999" },
];

const $ = (id) => document.getElementById(id);

const state = {
  token: "",
  wholeAccount: false,
  view: new URLSearchParams(), // the URL's filters, message excluded
  viewKey: null,
  query: new URLSearchParams(), // what the API is asked: the view with the range resolved
  window: { from: null, to: null }, // the list's range, as Dates (null: open)
  messages: [],
  seen: new Set(),
  cursor: null,
  hasMore: false,
  generation: 0, // bumped by every new listing, so stale replies are dropped
  openRow: null,
  openId: "",
  chart: null,
  stats: null,
  alerts: null, // the rules' states over the chart's range; null before (or without) alerting
  firing: [], // when an alert was firing, as [from, to] in Unix seconds, merged
  focus: -1, // the chart's bucket under keyboard focus
  anchor: -1, // where a Shift selection started
  painted: { list: false, chart: false },
};

// ---- token -----------------------------------------------------------------

function takeToken() {
  const fromFragment = new URLSearchParams(location.hash.slice(1)).get("token");
  if (fromFragment) {
    // Out of the address bar and the history; kept for reloads of this tab.
    history.replaceState(null, "", location.pathname + location.search);
    try { sessionStorage.setItem(TOKEN_KEY, fromFragment); } catch { /* storage blocked in some frames */ }
    return fromFragment;
  }
  try { return sessionStorage.getItem(TOKEN_KEY) || ""; } catch { return ""; }
}

// claims reads the token's payload for display only; the server verifies it.
function claims(token) {
  try {
    const payload = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    const bytes = Uint8Array.from(atob(payload), (c) => c.charCodeAt(0));
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return {};
  }
}

// ---- API -------------------------------------------------------------------

class APIError extends Error {
  constructor(status, body) {
    super((body && body.message) || `The service answered ${status}.`);
    this.status = status;
    this.fields = (body && body.errors) || [];
  }
}

async function request(url, accept) {
  try {
    return await fetch(url, {
      headers: { Authorization: `Bearer ${state.token}`, Accept: accept },
      cache: "no-store",
      credentials: "omit",
      referrerPolicy: "no-referrer",
    });
  } catch {
    throw new APIError(0, { message: "The service cannot be reached. Check your connection and try again." });
  }
}

async function api(url) {
  const resp = await request(url, "application/json");
  const body = await resp.json().catch(() => null);
  if (!resp.ok) throw new APIError(resp.status, body);
  return body;
}

function withQuery(base, extra = {}) {
  const url = new URL(base);
  url.search = state.query.toString();
  for (const [k, v] of Object.entries(extra)) url.searchParams.set(k, v);
  return url;
}

function listURL(cursor) {
  return withQuery(API, { limit: String(PAGE_SIZE), ...(cursor ? { cursor } : {}) });
}

function messageURL(id) {
  return new URL(`${API.pathname}/${encodeURIComponent(id)}`, API);
}

// ---- notices ---------------------------------------------------------------

function showNotice(text) {
  $("notice").textContent = text;
  $("notice").hidden = !text;
}

function explain(err) {
  if (err.status === 401) {
    stopWithMessage(expiredOrInvalid());
    return;
  }
  const fields = err.fields.map((f) => `${f.field} ${f.message}`).join("; ");
  if (err.status === 429 || err.status === 503) {
    showNotice("The service is busy. Wait a moment and try again.");
  } else {
    showNotice(fields ? `${err.message}: ${fields}.` : err.message);
  }
}

function expiredOrInvalid() {
  const exp = claims(state.token).exp;
  if (typeof exp === "number" && exp * 1000 <= Date.now()) {
    return `This portal link expired on ${formatTime(new Date(exp * 1000))}. Ask for a new link.`;
  }
  return "This portal link is not valid. Ask for a new link.";
}

function stopWithMessage(text) {
  try { sessionStorage.removeItem(TOKEN_KEY); } catch { /* ignore */ }
  $("viewer").hidden = true;
  showNotice("");
  $("fatal-text").textContent = text;
  $("fatal").hidden = false;
}

// ---- formatting ------------------------------------------------------------

const pad = (n, width = 2) => String(n).padStart(width, "0");

function formatTime(date) {
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ` +
    `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}.${pad(date.getMilliseconds(), 3)}`;
}

function prettyBody(body, contentType) {
  if (body === "") return "";
  const looksJSON = /json/i.test(contentType || "") || /^\s*[[{]/.test(body);
  if (looksJSON) {
    try { return JSON.stringify(JSON.parse(body), null, 2); } catch { /* not JSON after all */ }
  }
  return body;
}

function firstHeader(header, name) {
  const key = Object.keys(header || {}).find((k) => k.toLowerCase() === name.toLowerCase());
  return key ? header[key][0] : "";
}

// absoluteURL rebuilds the request's URL from its Host header (the scheme is a
// guess: https unless a proxy recorded otherwise). The path is appended as text,
// never resolved, so a path such as "//elsewhere/x" cannot change the host.
function absoluteURL(m) {
  const host = firstHeader(m.request.header, "Host") || "host.invalid";
  const scheme = firstHeader(m.request.header, "X-Forwarded-Proto") === "http" ? "http" : "https";
  return `${scheme}://${host}${m.path}`;
}

function formatDuration(ms) {
  if (typeof ms !== "number") return "–";
  if (ms < 10) return `${ms.toFixed(2).replace(/\.?0+$/, "")} ms`;
  if (ms < 1000) return `${ms.toFixed(1).replace(/\.0$/, "")} ms`;
  return `${(ms / 1000).toFixed(2)} s`;
}

function formatBytes(n) {
  if (typeof n !== "number") return "–";
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB"];
  let v = n / 1024;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) { v /= 1024; u++; }
  return `${v.toFixed(1)} ${units[u]} (${n.toLocaleString("en")} B)`;
}

const formatCount = (n) => n.toLocaleString("en");
const percent = (part, whole) => (whole > 0 ? `${(100 * part / whole).toFixed(1)} %` : "–");
const errorsOf = (status) => (status["4xx"] || 0) + (status["5xx"] || 0);

// datetime-local value (the viewer's time) of a Date, and back.
function localInput(date) {
  const d = new Date(date.getTime() - date.getTimezoneOffset() * 60e3);
  return d.toISOString().slice(0, 19);
}

function shortTime(date, withSeconds) {
  const time = `${pad(date.getHours())}:${pad(date.getMinutes())}${withSeconds ? `:${pad(date.getSeconds())}` : ""}`;
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${time}`;
}

// ---- the view in the URL -----------------------------------------------------

function urlParams() {
  const all = new URLSearchParams(location.search);
  const params = new URLSearchParams();
  for (const name of URL_PARAMS) {
    const value = all.get(name);
    if (value) params.set(name, value);
  }
  return params;
}

function viewOf(params) {
  const view = new URLSearchParams(params);
  view.delete("message");
  const range = view.get("range");
  if (!(range in RANGES) && range !== "custom") view.set("range", view.get("from") || view.get("to") ? "custom" : DEFAULT_RANGE);
  if (view.get("range") !== "custom") { view.delete("from"); view.delete("to"); }
  return view;
}

// navigate puts params in the address bar (a new history entry unless replace)
// and shows them.
function navigate(params, replace = false) {
  const search = params.toString();
  const target = location.pathname + (search ? `?${search}` : "");
  if (target !== location.pathname + location.search) {
    history[replace ? "replaceState" : "pushState"](null, "", target);
  }
  show();
}

// show brings the page in line with its URL: reloads list and chart when the
// filters changed, then opens or closes the message it names.
function show() {
  const params = urlParams();
  const view = viewOf(params);
  const key = view.toString();
  if (key !== state.viewKey) {
    state.viewKey = key;
    state.view = view;
    fillForm(view);
    resolveQuery(view);
    load(true);
    loadStats();
    loadAlerts();
  }
  const id = params.get("message") || "";
  if (id !== state.openId) {
    if (id) openMessage(id);
    else closeDetail(true);
  }
}

// resolveQuery turns a preset range into from/to at this moment, the same for
// list and chart.
function resolveQuery(view) {
  const query = new URLSearchParams(view);
  query.delete("range");
  const span = RANGES[view.get("range")];
  if (span) {
    const to = new Date();
    const from = new Date(to.getTime() - span);
    query.set("from", from.toISOString());
    query.set("to", to.toISOString());
  }
  state.query = query;
  const date = (v) => (v ? new Date(v) : null);
  state.window = { from: date(query.get("from")), to: date(query.get("to")) };
}

function fillForm(view) {
  const form = $("filters");
  const set = (name, value) => { form.elements[name].value = value || ""; };
  set("q", view.get("q"));
  set("name", view.get("name"));
  set("status_code", view.get("status_code"));
  set("method", view.get("method"));
  set("path_mode", view.has("path") ? "exact" : "prefix");
  set("path", view.get("path") || view.get("path_prefix"));
  set("route", view.get("route"));
  set("min_duration_ms", view.get("min_duration_ms"));
  set("range", view.get("range"));
  for (const name of ["from", "to"]) {
    const v = view.get(name);
    set(name, v && !Number.isNaN(Date.parse(v)) ? localInput(new Date(v)) : "");
  }
  const open = ["name", "status_code", "method", "path", "path_prefix", "route", "min_duration_ms"].filter((n) => view.get(n)).length;
  $("toggle-filters").textContent = open ? `More filters (${open})` : "More filters";
}

function readFilters(form) {
  const data = new FormData(form);
  const params = new URLSearchParams();
  const q = String(data.get("q") || "").trim();
  if (q) params.set("q", q);
  for (const name of ["name", "status_code", "method"]) {
    const value = String(data.get(name) || "").trim();
    if (value) params.set(name, value);
  }
  const path = String(data.get("path") || "").trim();
  if (path) params.set(data.get("path_mode") === "exact" ? "path" : "path_prefix", path.startsWith("/") ? path : `/${path}`);
  const route = String(data.get("route") || "").trim();
  if (route) params.set("route", route.startsWith("/") ? route : `/${route}`);
  const slower = String(data.get("min_duration_ms") || "").trim();
  if (slower) params.set("min_duration_ms", slower);
  const range = String(data.get("range") || DEFAULT_RANGE);
  params.set("range", range);
  if (range === "custom") {
    for (const name of ["from", "to"]) {
      // datetime-local is the viewer's local time; the API wants an instant.
      const value = data.get(name);
      if (value) params.set(name, new Date(value).toISOString());
    }
  }
  return params;
}

// ---- list ------------------------------------------------------------------

function statusClass(code) {
  return `status status-${String(code)[0]}xx`;
}

function cell(row, text, className) {
  const td = row.insertCell();
  td.textContent = text;
  if (className) td.className = className;
  return td;
}

function addRow(m) {
  const row = $("messages").tBodies[0].insertRow();
  row.tabIndex = 0;
  row.dataset.id = m.id;
  const created = new Date(m.created_at);
  const time = document.createElement("time");
  time.dateTime = m.created_at;
  time.title = formatTime(created);
  // The date and milliseconds give way on narrow screens (app.css).
  const date = document.createElement("span");
  date.className = "t-date";
  date.textContent = formatTime(created).slice(0, 11);
  const ms = document.createElement("span");
  ms.className = "t-ms";
  ms.textContent = formatTime(created).slice(19);
  time.append(date, formatTime(created).slice(11, 19), ms);
  row.insertCell().append(time);
  row.cells[0].className = "c-time";
  const app = cell(row, m.name, "c-app");
  app.hidden = !state.wholeAccount;
  cell(row, m.method, "c-method method");
  cell(row, m.path, "c-path path").title = m.path;
  cell(row, m.route || "–", "c-route path").title = m.route || "no route template sent";
  const status = document.createElement("span");
  status.className = statusClass(m.status_code);
  status.textContent = String(m.status_code);
  const statusCell = row.insertCell();
  statusCell.className = "c-status";
  statusCell.append(status);
  cell(row, formatDuration(m.duration_ms), "c-dur");
  cell(row, m.ip_address || "–", "c-ip");
  if (m.id === state.openId) {
    row.setAttribute("aria-current", "true");
    state.openRow = row;
  }
  row.addEventListener("click", () => select(m.id));
  row.addEventListener("keydown", (e) => {
    if (e.key === "Enter" || e.key === " ") {
      e.preventDefault();
      select(m.id);
    }
  });
}

function renderCount() {
  const n = state.messages.length;
  const noun = n === 1 ? "message" : "messages";
  $("count").textContent = state.hasMore ? `Showing ${n} ${noun}; more are available.` : `Showing ${n} ${noun}.`;
  $("empty").hidden = n > 0;
  $("load-more").hidden = !state.hasMore;
  $("download-har").disabled = n === 0;
}

async function load(reset) {
  if (reset) {
    state.generation++;
    state.messages = [];
    state.seen.clear();
    state.cursor = null;
    state.hasMore = false;
    state.openRow = null;
    $("messages").tBodies[0].replaceChildren();
  }
  const generation = state.generation;
  const button = $("load-more");
  button.disabled = true;
  $("messages").setAttribute("aria-busy", "true");
  $("count").textContent = "Loading…";
  try {
    const page = await api(listURL(state.cursor));
    if (generation !== state.generation) return;
    showNotice("");
    for (const m of page.messages) {
      if (state.seen.has(m.id)) continue;
      state.seen.add(m.id);
      state.messages.push(m);
      addRow(m);
    }
    state.hasMore = page.pagination.has_more;
    state.cursor = page.pagination.next_cursor;
  } catch (err) {
    if (generation === state.generation) explain(err);
  } finally {
    if (generation === state.generation) {
      button.disabled = false;
      $("messages").removeAttribute("aria-busy");
      renderCount();
      painted("list");
    }
  }
}

// painted marks the first useful paint (first page and chart both drawn), which
// the browser tests read.
function painted(part) {
  if (state.painted[part]) return;
  state.painted[part] = true;
  if (state.painted.list && state.painted.chart) performance.mark("reqlog:first-useful-paint");
}

// ---- traffic chart ---------------------------------------------------------

// chartQuery is the view's query with the chart's range: an open-ended custom
// range still needs a start, the default retention (30 days) back from its end.
function chartQuery() {
  const query = new URLSearchParams(state.query);
  if (!query.get("from")) {
    const to = query.get("to") ? new Date(query.get("to")) : new Date();
    query.set("from", new Date(to.getTime() - RANGES["30d"]).toISOString());
  }
  return query;
}

async function loadStats() {
  const generation = state.generation;
  $("chart").setAttribute("aria-busy", "true");
  const query = chartQuery();
  query.set("interval", intervalFor(query, $("chart").clientWidth));
  const url = new URL(STATS);
  url.search = query.toString();
  try {
    const reply = await api(url);
    if (generation !== state.generation) return;
    state.stats = reply.data;
    renderStats(reply.data);
  } catch (err) {
    if (generation !== state.generation) return;
    state.stats = null;
    if (state.chart) { state.chart.destroy(); state.chart = null; }
    $("chart").dataset.buckets = "0";
    $("buckets").tBodies[0].replaceChildren();
    for (const id of ["tile-total", "tile-errors", "tile-p50", "tile-p95"]) $(id).textContent = "–";
    $("chart-readout").textContent = err.status === 401 ? "" : `The chart is unavailable: ${err.message}`;
    if (err.status === 401) explain(err);
  } finally {
    if (generation === state.generation) {
      $("chart").removeAttribute("aria-busy");
      painted("chart");
    }
  }
}

const INTERVALS = { "1m": 60, "5m": 300, "15m": 900, "1h": 3600, "6h": 21600, "1d": 86400 };

// intervalFor is the narrowest interval whose bars stay at least about 9 px
// wide on a chart this wide (24 to 100 bars), so a phone gets fewer, wider bars.
function intervalFor(query, width) {
  const span = (query.get("to") ? Date.parse(query.get("to")) : Date.now()) - Date.parse(query.get("from"));
  const most = Math.max(24, Math.min(100, Math.floor((width || 800) / 9)));
  const names = Object.keys(INTERVALS);
  return names.find((name) => Math.ceil(span / (INTERVALS[name] * 1000)) + 1 <= most) || names.at(-1);
}

function bucketLabel(stats, i) {
  const start = new Date(stats.buckets[i].start);
  const end = new Date(start.getTime() + INTERVALS[stats.interval] * 1000);
  return `${shortTime(start, false)}–${shortTime(end, false).slice(11)}`;
}

function describeBucket(stats, i) {
  const b = stats.buckets[i];
  const parts = CLASSES.filter((c) => b.status[c.key]).map((c) => `${c.key} ${formatCount(b.status[c.key])}`);
  const p95 = b.duration_ms ? `, p95 ${formatDuration(b.duration_ms.p95)}` : "";
  return `${bucketLabel(stats, i)}: ${formatCount(b.count)} ${b.count === 1 ? "request" : "requests"}${parts.length ? ` (${parts.join(", ")})` : ""}, ` +
    `error rate ${percent(errorsOf(b.status), b.count)}${p95}`;
}

function renderStats(stats) {
  const total = stats.total;
  $("tile-total").textContent = formatCount(total.count);
  $("tile-errors").textContent = percent(errorsOf(total.status), total.count);
  $("tile-p50").textContent = total.duration_ms ? formatDuration(total.duration_ms.p50) : "–";
  $("tile-p95").textContent = total.duration_ms ? formatDuration(total.duration_ms.p95) : "–";
  const from = new Date(stats.from);
  const to = new Date(stats.to);
  $("range-label").textContent = `${shortTime(from, false)} to ${shortTime(to, false)}, ${stats.interval} per bar`;
  $("zoom-out").hidden = state.view.get("range") !== "custom";

  if (state.wholeAccount) {
    const list = $("application-names");
    list.replaceChildren();
    for (const n of stats.top_names || []) {
      const option = document.createElement("option");
      option.value = n.name;
      list.append(option);
    }
  }

  const body = $("buckets").tBodies[0];
  body.replaceChildren();
  stats.buckets.forEach((b, i) => {
    const row = body.insertRow();
    row.dataset.start = b.start;
    row.dataset.count = String(b.count);
    const th = document.createElement("th");
    th.scope = "row";
    th.textContent = bucketLabel(stats, i);
    row.append(th);
    for (const v of [b.count, b.status["2xx"], b.status["3xx"], b.status["4xx"], b.status["5xx"]]) cell(row, formatCount(v || 0));
    cell(row, percent(errorsOf(b.status), b.count));
    cell(row, b.duration_ms ? formatDuration(b.duration_ms.p95) : "–");
  });
  renderRoutes(stats.top_routes || []);
  state.focus = -1;
  state.anchor = -1;
  $("chart-readout").textContent = "";
  drawChart(stats);
}

// renderRoutes fills the per-route table; a route's name narrows the view to it.
function renderRoutes(routes) {
  const table = $("routes");
  table.hidden = routes.length === 0;
  const body = table.tBodies[0];
  body.replaceChildren();
  for (const r of routes) {
    const row = body.insertRow();
    const th = document.createElement("th");
    th.scope = "row";
    const button = document.createElement("button");
    button.type = "button";
    button.className = "link path";
    button.textContent = r.route;
    button.title = `Show the requests of ${r.route}`;
    button.addEventListener("click", () => {
      const params = new URLSearchParams(state.view);
      params.set("route", r.route);
      params.delete("message");
      navigate(params);
    });
    th.append(button);
    row.append(th);
    cell(row, formatCount(r.count));
    cell(row, `${formatCount(r.errors)} (${percent(r.errors, r.count)})`);
    for (const p of ["p50", "p95", "p99"]) cell(row, r.duration_ms ? formatDuration(r.duration_ms[p]) : "–");
  }
}

function drawChart(stats) {
  const el = $("chart");
  // What the chart shows, for tests and tools that cannot read a canvas.
  el.dataset.buckets = String(stats.buckets.length);
  el.dataset.interval = stats.interval;
  el.dataset.from = stats.from;
  el.dataset.to = stats.to;
  if (state.chart) { state.chart.destroy(); state.chart = null; }
  if (typeof uPlot !== "function") {
    $("chart-readout").textContent = "The chart library did not load; the table of intervals below still has the counts.";
    return;
  }
  const step = INTERVALS[stats.interval];
  // Each bar is drawn at its bucket's middle, so the cursor's nearest point is
  // the bar under it.
  const first = Date.parse(stats.buckets[0].start) / 1000;
  const xs = stats.buckets.map((b) => Date.parse(b.start) / 1000 + step / 2);
  // Stacked: series k holds the sum of classes 0..k; the tallest is drawn first
  // and each smaller one over it.
  const sums = [];
  let running = stats.buckets.map(() => 0);
  for (const c of CLASSES) {
    running = running.map((v, i) => v + (stats.buckets[i].status[c.key] || 0));
    sums.push(running);
  }
  const shown = CLASSES.map((c) => c.key !== "1xx" || stats.total.status["1xx"] > 0);
  $("legend-1xx").hidden = !shown[CLASSES.length - 1];
  const order = CLASSES.map((_, k) => k).reverse();
  const bars = uPlot.paths.bars({ size: [0.86, Infinity], align: 0, gap: 1 });
  const axis = { stroke: "#5b6475", grid: { stroke: "#e6e9ef", width: 1 }, ticks: { stroke: "#d9dee7", width: 1 }, font: "12px system-ui, sans-serif" };
  const opts = {
    width: Math.max(240, el.clientWidth),
    height: el.clientWidth < 500 ? 150 : 190,
    legend: { show: false },
    padding: [8, 18, 0, 0], // room for the last time label
    cursor: { drag: { x: true, y: false, setScale: false }, points: { show: false }, y: false },
    select: { show: true },
    scales: {
      x: { time: true, range: () => [first, first + step * stats.buckets.length] },
      y: { range: (u, min, max) => [0, Math.max(4, Math.ceil(max * 1.1))] },
    },
    axes: [
      { ...axis, grid: { show: false }, space: 70 },
      { ...axis, size: 44, space: 30, incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6],
        values: (u, splits) => splits.map((v) => (v >= 1e4 ? `${v / 1e3}k` : String(v))) },
    ],
    series: [{}, ...order.map((k) => ({
      label: CLASSES[k].key, show: shown[k], fill: CLASSES[k].color, stroke: CLASSES[k].color, width: 0, paths: bars, points: { show: false },
    }))],
    hooks: {
      drawClear: [drawFiring],
      setCursor: [(u) => {
        const i = u.cursor.idx;
        if (i != null) $("chart-readout").textContent = describeBucket(stats, i);
      }],
      setSelect: [(u) => {
        if (u.select.width < 3) return;
        const a = u.posToVal(u.select.left, "x");
        const b = u.posToVal(u.select.left + u.select.width, "x");
        zoomTo(Math.floor((a - first) / step), Math.ceil((b - first) / step) - 1);
      }],
    },
  };
  state.chart = new uPlot(opts, [xs, ...order.map((k) => sums[k])], el);
}

// drawFiring shades, behind the bars, the periods when an alert was firing: a
// pale band with a strong line along its top (pale enough that an empty slot
// still reads as empty). A period of a few seconds (an alert that fired just
// now, at the range's end) is drawn MIN_FIRING_PX wide, on whole pixels, so
// that it shows at all.
const MIN_FIRING_PX = 4;
function drawFiring(u) {
  const { left, top, width, height } = u.bbox;
  const ctx = u.ctx;
  const least = MIN_FIRING_PX * devicePixelRatio;
  let drawn = 0;
  ctx.save();
  for (const [from, to] of state.firing) {
    let x0 = Math.floor(Math.max(left, u.valToPos(from, "x", true)));
    let x1 = Math.ceil(Math.min(left + width, u.valToPos(to, "x", true)));
    if (x1 <= x0) continue;
    if (x1 - x0 < least) {
      x0 = Math.max(left, Math.min(x0, x1 - least));
      x1 = Math.min(left + width, x0 + least);
    }
    drawn++;
    ctx.fillStyle = "#fff0e8";
    ctx.fillRect(x0, top, x1 - x0, height);
    ctx.fillStyle = "#D55E00";
    ctx.fillRect(x0, top, x1 - x0, 3 * devicePixelRatio);
  }
  ctx.restore();
  $("chart").dataset.firing = String(drawn);
  $("legend-firing").hidden = drawn === 0;
}

// zoomTo narrows the range to buckets i..j (clamped to the current range) and
// reloads table and chart; the previous range stays one Back away.
function zoomTo(i, j) {
  const stats = state.stats;
  if (!stats) return;
  const n = stats.buckets.length;
  [i, j] = [Math.max(0, Math.min(i, j)), Math.min(n - 1, Math.max(i, j))];
  if (i > j) return;
  const step = INTERVALS[stats.interval] * 1000;
  let from = Date.parse(stats.buckets[i].start);
  let to = Date.parse(stats.buckets[j].start) + step;
  if (state.window.from && from < state.window.from.getTime()) from = state.window.from.getTime();
  if (state.window.to && to > state.window.to.getTime()) to = state.window.to.getTime();
  if (from >= to) return;
  const params = new URLSearchParams(state.view);
  params.set("range", "custom");
  params.set("from", new Date(from).toISOString());
  params.set("to", new Date(to).toISOString());
  navigate(params);
}

function markBuckets(u, i, j) {
  const left = u.valToPos(u.data[0][Math.min(i, j)], "x");
  const right = u.valToPos(u.data[0][Math.max(i, j)], "x");
  const half = (u.valToPos(u.data[0][0] + INTERVALS[state.stats.interval], "x") - u.valToPos(u.data[0][0], "x")) / 2;
  u.setSelect({ left: left - half, width: right - left + 2 * half, top: 0, height: u.over.clientHeight }, false);
  u.setCursor({ left: u.valToPos(u.data[0][j], "x"), top: u.over.clientHeight / 2 });
}

// The chart with the keyboard: arrows move between bars, Shift extends a
// selection, Enter narrows the range to it, Escape clears it.
function chartKey(e) {
  const u = state.chart;
  const stats = state.stats;
  if (!u || !stats || stats.buckets.length === 0) return;
  const n = stats.buckets.length;
  let next = state.focus;
  switch (e.key) {
    case "ArrowRight": next = state.focus < 0 ? 0 : Math.min(n - 1, state.focus + 1); break;
    case "ArrowLeft": next = state.focus < 0 ? n - 1 : Math.max(0, state.focus - 1); break;
    case "Home": next = 0; break;
    case "End": next = n - 1; break;
    case "Enter":
      if (state.focus >= 0) {
        e.preventDefault();
        zoomTo(state.anchor >= 0 ? state.anchor : state.focus, state.focus);
      }
      return;
    case "Escape":
      if (state.anchor >= 0 || state.focus >= 0) {
        e.preventDefault();
        e.stopPropagation();
        state.anchor = -1;
        u.setSelect({ left: 0, width: 0, top: 0, height: 0 }, false);
      }
      return;
    default: return;
  }
  e.preventDefault();
  if (e.shiftKey) {
    if (state.anchor < 0) state.anchor = state.focus < 0 ? next : state.focus;
  } else {
    state.anchor = -1;
  }
  state.focus = next;
  markBuckets(u, state.anchor >= 0 ? state.anchor : next, next);
  const selected = state.anchor >= 0 ? Math.abs(next - state.anchor) + 1 : 1;
  $("chart-readout").textContent = describeBucket(stats, next) + (selected > 1 ? `; ${selected} bars selected` : "");
}

function resizeChart() {
  const u = state.chart;
  const el = $("chart");
  if (!u || !el.clientWidth) return;
  const width = Math.max(240, el.clientWidth);
  const height = el.clientWidth < 500 ? 150 : 190;
  if (width !== u.width || height !== u.height) u.setSize({ width, height });
}

// ---- alerts ----------------------------------------------------------------

// loadAlerts reads the rules' states with their firing periods over the
// chart's range, lists them, and marks the periods on the chart. A service
// without alerting answers 404: the section stays hidden.
async function loadAlerts() {
  const generation = state.generation;
  const range = chartQuery();
  const url = new URL(ALERTS);
  url.search = new URLSearchParams({ from: range.get("from"), to: range.get("to") || new Date().toISOString() }).toString();
  try {
    const reply = await api(url);
    if (generation !== state.generation) return;
    state.alerts = reply.data;
  } catch (err) {
    if (generation !== state.generation) return;
    state.alerts = null;
    if (err.status === 401) explain(err);
  }
  state.firing = firingPeriods(state.alerts || []);
  renderAlerts(state.alerts || []);
  describeFiring();
  if (state.chart) state.chart.redraw(false);
}

// firingPeriods merges every rule's firing periods into [from, to] pairs of
// Unix seconds, oldest first; a period still open runs to the chart's end.
function firingPeriods(states) {
  const all = states.flatMap((st) => st.firing_periods.map((p) => [Date.parse(p.from) / 1000, p.to ? Date.parse(p.to) / 1000 : Infinity]))
    .sort((a, b) => a[0] - b[0]);
  const merged = [];
  for (const p of all) {
    const last = merged.at(-1);
    if (last && p[0] <= last[1]) last[1] = Math.max(last[1], p[1]);
    else merged.push([...p]);
  }
  return merged;
}

function describeFiring() {
  const spans = state.firing.map(([from, to]) => `from ${shortTime(new Date(from * 1000), false)} ` +
    (Number.isFinite(to) ? `to ${shortTime(new Date(to * 1000), false)}` : "until now"));
  $("chart-alerts").textContent = spans.length ? `An alert was firing ${spans.join("; ")}.` : "";
}

const STATUS_NAMES = { ok: "OK", pending: "Pending", firing: "Firing", resolved: "Resolved" };

// formatMetric writes a rule's value for a person: shares in percent,
// durations as the list writes them, counts whole.
function formatMetric(metric, v) {
  if (v === null || v === undefined) return "no data";
  if (metric.endsWith("error_rate")) return `${(100 * v).toFixed(1).replace(/\.0$/, "")} %`;
  if (metric.startsWith("duration_")) return formatDuration(v);
  return formatCount(v);
}

// condition is a rule's condition and filters, in one line.
function condition(rule) {
  const filters = [rule.name, rule.method, rule.path_prefix, rule.status_classes.join("/")].filter(Boolean);
  return `${rule.metric.replace(/_/g, " ")} ${rule.comparison} ${formatMetric(rule.metric, rule.threshold)} over ${rule.window}` +
    (filters.length ? ` · ${filters.join(" ")}` : "");
}

function renderAlerts(states) {
  const list = $("alert-rules");
  list.replaceChildren();
  $("alerts").hidden = states.length === 0;
  const firing = states.filter((st) => st.status === "firing").length;
  $("alerts-summary").textContent = states.length === 0 ? "" :
    `${states.length} ${states.length === 1 ? "rule" : "rules"}, ${firing} firing`;
  for (const st of states) {
    const li = document.createElement("li");
    li.className = "alert-rule";
    li.dataset.ruleId = st.rule.id;
    li.dataset.status = st.status;
    const badge = document.createElement("span");
    badge.className = `alert-status a-${st.status}`;
    badge.textContent = STATUS_NAMES[st.status] || st.status;
    const main = document.createElement("div");
    main.className = "alert-main";
    const title = document.createElement("span");
    title.className = "alert-title";
    title.textContent = st.rule.title || condition(st.rule);
    const cond = document.createElement("span");
    cond.className = "alert-condition muted";
    const since = st.since && st.evaluated_at ? `, since ${shortTime(new Date(st.since), false)}` : "";
    cond.textContent = condition(st.rule) + (st.rule.enabled ? since : " (disabled)");
    main.append(title, cond);
    const value = document.createElement("span");
    value.className = "alert-value";
    value.textContent = st.evaluated_at ? formatMetric(st.rule.metric, st.value) : "not evaluated yet";
    li.append(badge, main, value);
    if (st.recent_transitions.length) {
      const history = document.createElement("ul");
      history.className = "alert-history";
      history.setAttribute("aria-label", "Last changes");
      for (const tr of st.recent_transitions.slice(0, 3)) {
        const item = document.createElement("li");
        item.textContent = `${STATUS_NAMES[tr.from] || tr.from} → ${STATUS_NAMES[tr.to] || tr.to} ${shortTime(new Date(tr.at), false)}`;
        history.append(item);
      }
      li.append(history);
    }
    const show = document.createElement("button");
    show.type = "button";
    show.className = "secondary";
    show.textContent = "Show these requests";
    show.addEventListener("click", () => navigate(ruleView(st.rule)));
    li.append(show);
    list.append(li);
  }
}

// ruleView is the current view narrowed to a rule's requests.
function ruleView(rule) {
  const params = new URLSearchParams(state.view);
  for (const n of ["name", "method", "path", "path_prefix", "status_code"]) params.delete(n);
  if (rule.name && state.wholeAccount) params.set("name", rule.name);
  if (rule.method) params.set("method", rule.method);
  if (rule.path_prefix) params.set("path_prefix", rule.path_prefix);
  if (rule.status_classes.length === 1) params.set("status_code", rule.status_classes[0]);
  return params;
}

// ---- detail ----------------------------------------------------------------

function fillHeaders(table, header) {
  const body = table.tBodies[0];
  body.replaceChildren();
  const names = Object.keys(header || {}).sort();
  for (const name of names) {
    for (const value of header[name]) {
      const row = body.insertRow();
      const th = document.createElement("th");
      th.scope = "row";
      th.textContent = name;
      row.append(th);
      cell(row, value);
    }
  }
  if (names.length === 0) {
    const row = body.insertRow();
    const td = cell(row, "No headers", "muted");
    td.colSpan = 2;
  }
}

function fillBody(pre, content) {
  const text = prettyBody(content.body, content.content_type);
  pre.textContent = text || "(empty)";
  pre.classList.toggle("muted", text === "");
}

// rulesText says which privacy rule set versions scrubbed a message and which
// fields their rules changed: rule ids and field paths, never values.
function rulesText(rules) {
  if (!rules || (!rules.version && !rules.rescrubbed_by)) return "None applied";
  let text = rules.version ? `Rule set version ${rules.version}` : "Stored before a rule set";
  if (rules.rescrubbed_by) text += `, re-scrubbed by version ${rules.rescrubbed_by}`;
  const changes = rules.changes || [];
  text += changes.length ? `; changed ${changes.map((c) => `${c.field} (${c.rule})`).join(", ")}` : "; nothing changed";
  return text;
}

function fillSummary(m, rules) {
  const items = [
    ["Status", String(m.status_code)],
    ["Time", `${formatTime(new Date(m.created_at))} (${m.created_at})`],
    ["Duration", formatDuration(m.duration_ms)],
    ["Application", m.name],
    ["IP address", m.ip_address || "–"],
    ["Request type", m.request.content_type || "–"],
    ["Request size", formatBytes(m.request.size)],
    ["Response type", m.response.content_type || "–"],
    ["Response size", formatBytes(m.response.size)],
    ["Privacy rules", rulesText(rules)],
    ["Reference", m.reference],
    ["ID", m.id],
  ];
  const dl = $("detail-summary");
  dl.replaceChildren();
  for (const [term, value] of items) {
    const dt = document.createElement("dt");
    dt.textContent = term;
    const dd = document.createElement("dd");
    dd.textContent = value;
    dl.append(dt, dd);
  }
}

// select opens a message from the list: a history entry of its own, so Back
// closes it and its address is the message's link.
function select(id) {
  const params = urlParams();
  params.set("message", id);
  navigate(params);
}

function markRow(id) {
  if (state.openRow) state.openRow.removeAttribute("aria-current");
  state.openRow = [...$("messages").tBodies[0].rows].find((r) => r.dataset.id === id) || null;
  if (state.openRow) state.openRow.setAttribute("aria-current", "true");
}

// openMessage shows the message id from the service (never from the list alone,
// so a link shows exactly what the session may read).
async function openMessage(id) {
  state.openId = id;
  markRow(id);
  let m, rules;
  try {
    ({ data: m, rules } = await api(messageURL(id)));
  } catch (err) {
    if (state.openId !== id) return;
    if (err.status === 404 || err.status === 400) {
      $("detail").hidden = true;
      $("detail-missing").hidden = false;
      $("detail-missing").querySelector("h2").focus();
      return;
    }
    return explain(err);
  }
  if (state.openId !== id) return;
  $("detail-missing").hidden = true;
  $("detail-title").textContent = `${m.method} ${m.path}`;
  fillSummary(m, rules);
  $("curl").textContent = curlCommand(m);
  $("copy-status").textContent = "";
  fillHeaders($("request-headers"), m.request.header);
  fillBody($("request-body"), m.request);
  fillHeaders($("response-headers"), m.response.header);
  fillBody($("response-body"), m.response);
  $("detail").hidden = false;
  $("detail-title").focus();
}

function closeDetail(returnFocus) {
  $("detail").hidden = true;
  $("detail-missing").hidden = true;
  const row = state.openRow;
  state.openRow = null;
  state.openId = "";
  if (row) {
    row.removeAttribute("aria-current");
    if (returnFocus && row.isConnected) row.focus();
  }
}

function leaveDetail() {
  const params = urlParams();
  params.delete("message");
  navigate(params);
}

// The message's link holds its id only: whoever opens it needs a session that
// may read it, and sees "not found or not yours" otherwise.
function messageLink(id) {
  return `${location.origin}${location.pathname}?message=${encodeURIComponent(id)}`;
}

async function copyText(text, status, fallbackNode) {
  try {
    await navigator.clipboard.writeText(text);
    $("copy-status").textContent = status;
  } catch {
    // No clipboard access (an embedding frame may not allow it): select the text.
    if (fallbackNode) {
      getSelection().selectAllChildren(fallbackNode);
      $("copy-status").textContent = "Selected: press Ctrl+C (⌘C) to copy.";
    } else {
      $("copy-status").textContent = `Copy this link: ${text}`;
    }
  }
}

// ---- cURL ------------------------------------------------------------------

function shellQuote(s) {
  return /^[A-Za-z0-9_\/:.,=@%+-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

function curlCommand(m) {
  const lines = [`curl -X ${shellQuote(m.method)} ${shellQuote(absoluteURL(m))}`];
  for (const name of Object.keys(m.request.header).sort()) {
    if (/^(host|content-length)$/i.test(name)) continue;
    for (const value of m.request.header[name]) lines.push(`-H ${shellQuote(`${name}: ${value}`)}`);
  }
  if (m.request.body !== "") lines.push(`--data-raw ${shellQuote(m.request.body)}`);
  return lines.join(" \\\n  ");
}

// ---- HAR -------------------------------------------------------------------

const STATUS_TEXT = {
  100: "Continue", 101: "Switching Protocols", 200: "OK", 201: "Created", 202: "Accepted", 204: "No Content",
  206: "Partial Content", 301: "Moved Permanently", 302: "Found", 303: "See Other", 304: "Not Modified",
  307: "Temporary Redirect", 308: "Permanent Redirect", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden",
  404: "Not Found", 405: "Method Not Allowed", 409: "Conflict", 410: "Gone", 413: "Content Too Large",
  415: "Unsupported Media Type", 422: "Unprocessable Content", 429: "Too Many Requests",
  500: "Internal Server Error", 501: "Not Implemented", 502: "Bad Gateway", 503: "Service Unavailable",
  504: "Gateway Timeout",
};

const byteLength = (s) => new TextEncoder().encode(s).length;

function headerList(header) {
  return Object.keys(header || {}).sort().flatMap((name) => header[name].map((value) => ({ name, value })));
}

function queryList(path) {
  const query = path.includes("?") ? path.slice(path.indexOf("?") + 1).split("#")[0] : "";
  return [...new URLSearchParams(query)].map(([name, value]) => ({ name, value }));
}

function harEntry(m) {
  const request = {
    method: m.method,
    url: absoluteURL(m),
    httpVersion: "HTTP/1.1",
    cookies: [],
    headers: headerList(m.request.header),
    queryString: queryList(m.path),
    headersSize: -1,
    bodySize: byteLength(m.request.body),
  };
  if (m.request.body !== "") {
    request.postData = { mimeType: m.request.content_type || "application/octet-stream", text: m.request.body };
  }
  const size = byteLength(m.response.body);
  return {
    startedDateTime: m.created_at,
    time: 0, // not recorded
    request,
    response: {
      status: m.status_code,
      statusText: STATUS_TEXT[m.status_code] || "",
      httpVersion: "HTTP/1.1",
      cookies: [],
      headers: headerList(m.response.header),
      content: { size, mimeType: m.response.content_type || "application/octet-stream", text: m.response.body },
      redirectURL: firstHeader(m.response.header, "Location"),
      headersSize: -1,
      bodySize: size,
    },
    cache: {},
    timings: { blocked: -1, dns: -1, connect: -1, ssl: -1, send: 0, wait: 0, receive: 0 },
    _reqlog: { id: m.id, reference: m.reference, application: m.name, domain: m.domain, ip_address: m.ip_address },
  };
}

// ---- exports ---------------------------------------------------------------

function fileStem() {
  const c = claims(state.token);
  const app = (state.view.get("name") || c.app || (c.all ? "account" : "messages")).replace(/[^A-Za-z0-9._-]+/g, "-");
  return `reqlog-${app}-${new Date().toISOString().replace(/[:.]/g, "-")}`;
}

function saveBlob(blob, name) {
  const link = document.createElement("a");
  link.href = URL.createObjectURL(blob);
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 60_000);
}

// exportAs downloads every message matching the filters from the export
// endpoint. The token goes in a header, so this is a fetch and a blob, never a
// link with the token in its URL.
async function exportAs(format, button) {
  const status = $("download-status");
  button.disabled = true;
  status.textContent = `Preparing the ${format.toUpperCase()} download…`;
  try {
    const resp = await request(withQuery(EXPORT, { format }), format === "csv" ? "text/csv" : "application/x-ndjson");
    if (!resp.ok) throw new APIError(resp.status, await resp.json().catch(() => null));
    const blob = await resp.blob();
    saveBlob(blob, `${fileStem()}.${format}`);
    status.textContent = `Downloaded ${format.toUpperCase()}.`;
  } catch (err) {
    status.textContent = "";
    explain(err);
  } finally {
    button.disabled = false;
  }
}

function downloadHAR() {
  const har = {
    log: {
      version: "1.2",
      creator: { name: "reqlog portal", version: "1" },
      entries: state.messages.map(harEntry),
    },
  };
  saveBlob(new Blob([JSON.stringify(har, null, 2)], { type: "application/json" }), `${fileStem()}.har`);
}

// ---- start -----------------------------------------------------------------

function start() {
  state.token = takeToken();
  if (!state.token) {
    stopWithMessage("This page needs an access link: open it through the link you were given. " +
      "A link to one message opens in the tab where your access link is open.");
    return;
  }
  const c = claims(state.token);
  state.wholeAccount = c.all === true;
  $("application").textContent = c.app ? `· ${c.app}` : state.wholeAccount ? "· all applications" : "";
  $("application-filter").hidden = !state.wholeAccount;
  for (const th of document.querySelectorAll("#messages .c-app")) th.hidden = !state.wholeAccount;
  if (typeof c.exp === "number") $("expiry").textContent = `Access until ${formatTime(new Date(c.exp * 1000))}`;
  $("viewer").hidden = false;

  const form = $("filters");
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    navigate(readFilters(form));
  });
  form.addEventListener("reset", (e) => {
    e.preventDefault();
    navigate(new URLSearchParams());
  });
  // Typing a date makes the range custom; choosing a preset clears the dates.
  for (const name of ["from", "to"]) {
    form.elements[name].addEventListener("input", () => {
      if (form.elements[name].value) form.elements.range.value = "custom";
    });
  }
  form.elements.range.addEventListener("change", () => {
    if (form.elements.range.value !== "custom") { form.elements.from.value = ""; form.elements.to.value = ""; }
  });
  $("toggle-filters").addEventListener("click", () => {
    const open = form.classList.toggle("open");
    $("toggle-filters").setAttribute("aria-expanded", String(open));
  });
  $("zoom-out").addEventListener("click", () => {
    const params = new URLSearchParams(state.view);
    for (const n of ["from", "to"]) params.delete(n);
    params.set("range", DEFAULT_RANGE);
    navigate(params);
  });
  $("chart").addEventListener("keydown", chartKey);
  new ResizeObserver(resizeChart).observe($("chart"));
  $("load-more").addEventListener("click", () => load(false));
  $("download-har").addEventListener("click", downloadHAR);
  $("download-ndjson").addEventListener("click", (e) => exportAs("ndjson", e.currentTarget));
  $("download-csv").addEventListener("click", (e) => exportAs("csv", e.currentTarget));
  $("copy-curl").addEventListener("click", () => copyText($("curl").textContent, "Copied.", $("curl")));
  $("copy-link").addEventListener("click", () => copyText(messageLink(state.openId), "Link copied."));
  $("close-detail").addEventListener("click", leaveDetail);
  $("close-missing").addEventListener("click", leaveDetail);
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && (!$("detail").hidden || !$("detail-missing").hidden)) leaveDetail();
  });
  window.addEventListener("popstate", show);
  show();
}

start();
