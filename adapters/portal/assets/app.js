// The reqlog customer portal. It reads its session token from the URL fragment
// (never sent to a server), keeps it for this tab only, and calls the API's read
// endpoints with it. Everything that comes from a message is written with
// textContent, never parsed as HTML.

const PAGE_SIZE = 20;
const TOKEN_KEY = "reqlog.portal.token";
const API = new URL("v1/messages", document.baseURI);

const $ = (id) => document.getElementById(id);

const state = {
  token: "",
  filters: new URLSearchParams(),
  messages: [],
  seen: new Set(),
  cursor: null,
  hasMore: false,
  generation: 0, // bumped by every new listing, so stale replies are dropped
  openRow: null,
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

async function api(url) {
  let resp;
  try {
    resp = await fetch(url, {
      headers: { Authorization: `Bearer ${state.token}`, Accept: "application/json" },
      cache: "no-store",
      credentials: "omit",
      referrerPolicy: "no-referrer",
    });
  } catch {
    throw new APIError(0, { message: "The service cannot be reached. Check your connection and try again." });
  }
  const body = await resp.json().catch(() => null);
  if (!resp.ok) throw new APIError(resp.status, body);
  return body;
}

function listURL(cursor) {
  const url = new URL(API);
  url.search = state.filters.toString();
  url.searchParams.set("limit", String(PAGE_SIZE));
  if (cursor) url.searchParams.set("cursor", cursor);
  return url;
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
  const time = document.createElement("time");
  time.dateTime = m.created_at;
  time.textContent = formatTime(new Date(m.created_at));
  row.insertCell().append(time);
  cell(row, m.method, "method");
  cell(row, m.path, "path").title = m.path;
  const status = document.createElement("span");
  status.className = statusClass(m.status_code);
  status.textContent = String(m.status_code);
  row.insertCell().append(status);
  cell(row, m.ip_address || "–", "ip");
  row.addEventListener("click", () => openDetail(m, row));
  row.addEventListener("keydown", (e) => {
    if (e.key === "Enter" || e.key === " ") {
      e.preventDefault();
      openDetail(m, row);
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
    $("messages").tBodies[0].replaceChildren();
    closeDetail(false);
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
    }
  }
}

// ---- filters ---------------------------------------------------------------

function readFilters(form) {
  const data = new FormData(form);
  const params = new URLSearchParams();
  for (const name of ["status_code", "method"]) {
    if (data.get(name)) params.set(name, data.get(name));
  }
  const path = String(data.get("path") || "").trim();
  if (path) params.set(data.get("path_mode") === "exact" ? "path" : "path_prefix", path.startsWith("/") ? path : `/${path}`);
  for (const name of ["from", "to"]) {
    // datetime-local is the viewer's local time; the API wants an instant.
    const value = data.get(name);
    if (value) params.set(name, new Date(value).toISOString());
  }
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

function fillSummary(m) {
  const items = [
    ["Status", String(m.status_code)],
    ["Time", `${formatTime(new Date(m.created_at))} (${m.created_at})`],
    ["IP address", m.ip_address || "–"],
    ["Request type", m.request.content_type || "–"],
    ["Response type", m.response.content_type || "–"],
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

async function openDetail(listed, row) {
  if (state.openRow) state.openRow.removeAttribute("aria-current");
  state.openRow = row;
  row.setAttribute("aria-current", "true");
  let m = listed;
  try {
    m = (await api(new URL(`${API.pathname}/${encodeURIComponent(listed.id)}`, API))).data;
  } catch (err) {
    if (err.status === 401) return explain(err);
    // The listing already holds the whole message; show that.
  }
  if (state.openRow !== row) return;
  $("detail-title").textContent = `${m.method} ${m.path}`;
  fillSummary(m);
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
  const row = state.openRow;
  state.openRow = null;
  if (row) {
    row.removeAttribute("aria-current");
    if (returnFocus && row.isConnected) row.focus();
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

async function copyCurl() {
  const text = $("curl").textContent;
  try {
    await navigator.clipboard.writeText(text);
    $("copy-status").textContent = "Copied.";
  } catch {
    // No clipboard access (an embedding frame may not allow it): select the text.
    getSelection().selectAllChildren($("curl"));
    $("copy-status").textContent = "Selected: press Ctrl+C (⌘C) to copy.";
  }
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

function downloadHAR() {
  const har = {
    log: {
      version: "1.2",
      creator: { name: "reqlog portal", version: "1" },
      entries: state.messages.map(harEntry),
    },
  };
  const blob = new Blob([JSON.stringify(har, null, 2)], { type: "application/json" });
  const link = document.createElement("a");
  link.href = URL.createObjectURL(blob);
  const app = (claims(state.token).app || "messages").replace(/[^A-Za-z0-9._-]+/g, "-");
  link.download = `reqlog-${app}-${new Date().toISOString().replace(/[:.]/g, "-")}.har`;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 60_000);
}

// ---- start -----------------------------------------------------------------

function start() {
  state.token = takeToken();
  if (!state.token) {
    stopWithMessage("This page needs an access link: open it through the link you were given.");
    return;
  }
  const c = claims(state.token);
  $("application").textContent = c.app ? `· ${c.app}` : "";
  if (typeof c.exp === "number") $("expiry").textContent = `Access until ${formatTime(new Date(c.exp * 1000))}`;
  $("viewer").hidden = false;

  const form = $("filters");
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    state.filters = readFilters(form);
    load(true);
  });
  form.addEventListener("reset", () => {
    state.filters = new URLSearchParams();
    load(true);
  });
  $("load-more").addEventListener("click", () => load(false));
  $("download-har").addEventListener("click", downloadHAR);
  $("copy-curl").addEventListener("click", copyCurl);
  $("close-detail").addEventListener("click", () => closeDetail(true));
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && !$("detail").hidden) closeDetail(true);
  });
  load(true);
}

start();
