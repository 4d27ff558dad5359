// Browser test of the reqlog customer portal: it starts a real reqlogd, seeds
// messages through the API, creates a portal session and drives the page in a
// headless system Chromium through playwright-core.
//
//   node portal.e2e.mjs <path of a reqlogd binary>
//
// Environment: CHROMIUM (default /usr/bin/chromium); PORTAL_SCREENSHOTS, a folder
// that receives portal-list.png and portal-detail.png.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createHmac, randomBytes } from "node:crypto";
import { access, mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import readline from "node:readline";
import { chromium } from "playwright-core";

const REQLOGD = process.argv[2];
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const SCREENSHOTS = process.env.PORTAL_SCREENSHOTS || "";
const SECRET = randomBytes(32).toString("base64url");
const KEYS = { acmeLive: "rk_e2e_acme_live", acmeTest: "rk_e2e_acme_test", globexLive: "rk_e2e_globex_live" };
const MASK = "***************";
const PAGE_SIZE = 20; // the page's, not configurable

// ---- small helpers ---------------------------------------------------------

const cleanups = [];
let failed = false;
const counts = { passed: 0, failed: 0 };

async function step(name, fn) {
  const started = Date.now();
  try {
    await fn();
    counts.passed++;
    console.log(`ok   ${name} (${Date.now() - started} ms)`);
  } catch (err) {
    failed = true;
    counts.failed++;
    console.error(`FAIL ${name}\n${err.stack || err}`);
    throw err;
  }
}

function freePortServer(handler) {
  return new Promise((resolve) => {
    const server = createServer(handler);
    server.listen(0, "127.0.0.1", () => resolve(server));
  });
}

// ---- reqlogd ---------------------------------------------------------------

async function startReqlogd(frameAncestors) {
  await access(REQLOGD).catch(() => {
    throw new Error(`usage: node portal.e2e.mjs <reqlogd binary>; ${REQLOGD} does not exist`);
  });
  const child = spawn(REQLOGD, [], {
    env: {
      PATH: process.env.PATH,
      REQLOG_ADDR: "127.0.0.1:0",
      REQLOG_API_KEYS: `acme:live:${KEYS.acmeLive},acme:test:${KEYS.acmeTest},globex:live:${KEYS.globexLive}`,
      REQLOG_VISIBILITY_DELAY: "0",
      REQLOG_RATE_LIMIT: "0",
      REQLOG_PORTAL_SECRET: SECRET,
      REQLOG_PORTAL_FRAME_ANCESTORS: frameAncestors,
      REQLOG_LOG_FORMAT: "json",
    },
    stdio: ["ignore", "ignore", "pipe"],
  });
  cleanups.push(() => new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once("exit", resolve);
    child.kill("SIGTERM");
  }));
  const log = [];
  const addr = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`reqlogd did not listen within 20 s:\n${log.join("\n")}`)), 20_000);
    child.once("exit", (code) => reject(new Error(`reqlogd exited with ${code}:\n${log.join("\n")}`)));
    readline.createInterface({ input: child.stderr }).on("line", (line) => {
      log.push(line);
      try {
        const entry = JSON.parse(line);
        if (entry.msg === "listening") {
          clearTimeout(timer);
          resolve(entry.addr);
        }
      } catch { /* not JSON: ignore */ }
    });
  });
  return { base: `http://${addr}`, log };
}

async function api(base, method, target, key, body) {
  const resp = await fetch(base + target, {
    method,
    headers: { Authorization: `Bearer ${key}`, ...(body ? { "Content-Type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const json = await resp.json();
  if (!resp.ok) throw new Error(`${method} ${target}: ${resp.status} ${JSON.stringify(json)}`);
  return json;
}

// ---- seed data -------------------------------------------------------------

const NOW = Math.floor(Date.now() / 1000);
const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"];
const STATUSES = [200, 201, 204, 302, 400, 404, 422, 500, 503];
const XSS = `<img src=x onerror="alert('xss')">`;

// 45 messages of application "shop", one a minute, oldest first; 5 and 9 are
// coprime, so every method meets every status once.
const shop = Array.from({ length: 45 }, (_, i) => {
  const method = METHODS[i % METHODS.length];
  const status = STATUSES[i % STATUSES.length];
  const hasBody = ["POST", "PUT", "PATCH"].includes(method);
  const note = i % 4 === 0 ? XSS : "gift wrap"; // markup the page must show as text
  return {
    name: "shop",
    created_at: NOW - (45 - i) * 60,
    ip_address: i % 7 === 0 ? `2001:db8::${i + 1}` : `203.0.113.${i + 1}`,
    method,
    path: [`/orders/${i}`, `/customers/${i}?expand=orders`, "/orders"][i % 3],
    request: {
      header: {
        Host: "api.shop.example",
        Authorization: `Bearer customer-secret-${i}`,
        Accept: "application/json",
        "X-Note": note,
        ...(hasBody ? { "Content-Type": "application/json" } : {}),
      },
      body: hasBody ? JSON.stringify({ order: i, items: [{ sku: "A-1", qty: 2 }], note }) : "",
    },
    response: {
      status_code: status,
      header: {
        ...(status === 204 ? {} : { "Content-Type": "application/json; charset=utf-8" }),
        ...(status === 302 ? { Location: "/orders/1" } : {}),
      },
      body: status === 204 ? "" : JSON.stringify({ id: i, ok: status < 400, note }),
    },
  };
});

// Messages the shop session must never show.
const others = (name, n) => Array.from({ length: n }, (_, i) => ({
  name, created_at: NOW - i * 30, method: "GET", path: `/${name}/${i}`,
  request: { header: {} }, response: { status_code: 200, body: "" },
}));

// newest first, as the portal lists them
const expected = (keep = () => true) => shop.map((m, i) => ({ ...m, i })).filter(keep).reverse();

// ---- page helpers ----------------------------------------------------------

async function rows(page) {
  return page.$$eval("#messages tbody tr", (trs) => trs.map((tr) => ({
    id: tr.dataset.id,
    cells: [...tr.cells].map((td) => td.textContent),
  })));
}

async function settled(page) {
  await page.waitForFunction(() => !document.querySelector("#messages").hasAttribute("aria-busy"));
}

async function applyFilters(page, { status = "", method = "", pathMode = "prefix", path: p = "", from = "", to = "" }) {
  await page.getByLabel("Status").selectOption(status);
  await page.getByLabel("Method").selectOption(method);
  await page.getByLabel("Path match").selectOption(pathMode);
  await page.getByLabel("Path", { exact: true }).fill(p);
  await page.getByLabel("From").fill(from);
  await page.getByLabel("To").fill(to);
  await page.getByRole("button", { name: "Apply filters" }).click();
  await settled(page);
}

async function loadAll(page) {
  const more = page.getByRole("button", { name: "Load more" });
  while (await more.isVisible()) {
    const before = (await rows(page)).length;
    await more.click();
    await page.waitForFunction((n) => document.querySelectorAll("#messages tbody tr").length > n, before);
    await settled(page);
  }
}

function assertRows(actual, wanted, what) {
  assert.deepEqual(actual.map((r) => r.id), wanted.map((m) => m.id), `${what}: rows`);
}

// datetime-local value of a Unix time; the browser runs in UTC.
const localInput = (unix) => new Date(unix * 1000).toISOString().slice(0, 19);

function forgeToken(claims) {
  const part = (o) => Buffer.from(JSON.stringify(o)).toString("base64url");
  const signing = `${part({ alg: "HS256", typ: "JWT" })}.${part(claims)}`;
  return `rlp_${signing}.${createHmac("sha256", SECRET).update(signing).digest("base64url")}`;
}

function validateHAR(har, loaded) {
  const isStr = (v) => typeof v === "string";
  const isNum = (v) => typeof v === "number" && Number.isFinite(v);
  const pairs = (list, what) => {
    assert.ok(Array.isArray(list), `${what} is an array`);
    for (const p of list) assert.ok(isStr(p.name) && isStr(p.value), `${what} entries are {name, value}`);
  };
  assert.equal(har.log.version, "1.2");
  assert.ok(isStr(har.log.creator.name) && isStr(har.log.creator.version), "creator");
  assert.equal(har.log.entries.length, loaded.length, "one entry per loaded row");
  har.log.entries.forEach((e, n) => {
    const m = loaded[n];
    assert.ok(!Number.isNaN(Date.parse(e.startedDateTime)), "startedDateTime is ISO 8601");
    assert.equal(Math.floor(Date.parse(e.startedDateTime) / 1000), m.created_at, "startedDateTime");
    assert.ok(isNum(e.time) && e.time >= 0, "time");
    const rq = e.request;
    assert.equal(rq.method, m.method);
    assert.equal(rq.url, `https://api.shop.example${m.path}`);
    assert.ok(isStr(rq.httpVersion));
    pairs(rq.headers, "request.headers");
    pairs(rq.queryString, "request.queryString");
    assert.ok(Array.isArray(rq.cookies));
    assert.ok(isNum(rq.headersSize) && isNum(rq.bodySize));
    assert.deepEqual(rq.headers.find((h) => h.name === "Authorization"), { name: "Authorization", value: MASK });
    if (m.request.body) {
      assert.equal(rq.postData.text, m.request.body);
      assert.equal(rq.postData.mimeType, "application/json");
    } else {
      assert.equal(rq.postData, undefined, "no postData without a body");
    }
    assert.deepEqual(rq.queryString, m.path.includes("?") ? [{ name: "expand", value: "orders" }] : []);
    const rs = e.response;
    assert.equal(rs.status, m.response.status_code);
    assert.ok(isStr(rs.statusText) && isStr(rs.httpVersion) && isStr(rs.redirectURL));
    pairs(rs.headers, "response.headers");
    assert.ok(Array.isArray(rs.cookies));
    assert.ok(isNum(rs.content.size) && isStr(rs.content.mimeType));
    assert.equal(rs.content.text, m.response.body);
    assert.equal(rs.redirectURL, m.response.header.Location || "");
    assert.ok(isNum(rs.headersSize) && isNum(rs.bodySize));
    assert.equal(typeof e.cache, "object");
    for (const t of ["send", "wait", "receive"]) assert.ok(isNum(e.timings[t]) && e.timings[t] >= 0, `timings.${t}`);
  });
}

// ---- the test --------------------------------------------------------------

async function main() {
  // Two embedding sites: one allowed to frame the portal, one not.
  let portalURL = "";
  const framePage = (_, res) => {
    res.setHeader("Content-Type", "text/html");
    res.end(`<!doctype html><title>host</title><iframe id="portal" src="${portalURL}" width="1000" height="600"></iframe>`);
  };
  const allowed = await freePortServer(framePage);
  const refused = await freePortServer(framePage);
  cleanups.push(() => new Promise((r) => allowed.close(r)), () => new Promise((r) => refused.close(r)));
  const allowedOrigin = `http://127.0.0.1:${allowed.address().port}`;

  const { base, log } = await startReqlogd(`'self' ${allowedOrigin}`);
  let session;

  await step("seed messages and create a session through the API", async () => {
    const stored = await api(base, "POST", "/v1/messages", KEYS.acmeLive, [...shop, ...others("blog", 5)]);
    stored.data.slice(0, shop.length).forEach((id, i) => { shop[i].id = id.id; });
    await api(base, "POST", "/v1/messages", KEYS.acmeTest, others("shop", 5));
    await api(base, "POST", "/v1/messages", KEYS.globexLive, others("shop", 5));
    session = (await api(base, "POST", "/v1/portal/sessions", KEYS.acmeLive, { name: "shop", expires_in: 900 })).data;
    assert.match(session.url, /\/portal#token=rlp_/);
    portalURL = session.url;
  });

  await access(CHROMIUM).catch(() => {
    throw new Error(`no Chromium at ${CHROMIUM}: apt-get install chromium, or set CHROMIUM to its path`);
  });
  const userData = await mkdtemp(path.join(tmpdir(), "reqlog-portal-e2e-"));
  cleanups.push(() => rm(userData, { recursive: true, force: true }));
  const context = await chromium.launchPersistentContext(userData, {
    executablePath: CHROMIUM,
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    viewport: { width: 1440, height: 900 },
    timezoneId: "UTC",
    acceptDownloads: true,
  });
  cleanups.unshift(() => context.close());
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: base });

  const page = context.pages()[0] || await context.newPage();
  page.setDefaultTimeout(10_000);
  const problems = [];
  page.on("pageerror", (err) => problems.push(`page error: ${err.message}`));
  page.on("console", (msg) => { if (msg.type() === "error") problems.push(`console: ${msg.text()}`); });
  page.on("dialog", (dialog) => { problems.push(`dialog: ${dialog.message()}`); dialog.dismiss(); });
  page.on("request", (req) => {
    const url = req.url();
    if (!url.startsWith(`${base}/`) && !url.startsWith("blob:") && !url.startsWith("data:")) problems.push(`external request: ${url}`);
  });

  await step("the list loads the newest page, and the token leaves the address bar", async () => {
    await page.goto(session.url);
    await settled(page);
    const first = await rows(page);
    assertRows(first, expected().slice(0, PAGE_SIZE), "first page");
    const newest = expected()[0];
    assert.deepEqual(first[0].cells.slice(1), [newest.method, newest.path, String(newest.response.status_code), newest.ip_address]);
    assert.equal(await page.locator("#count").textContent(), `Showing ${PAGE_SIZE} messages; more are available.`);
    assert.ok(!page.url().includes("token"), `the URL still holds the token: ${page.url()}`);
    assert.equal(await page.locator("#application").textContent(), "· shop");
    if (SCREENSHOTS) {
      await mkdir(SCREENSHOTS, { recursive: true });
      await page.screenshot({ path: path.join(SCREENSHOTS, "portal-list.png") });
    }
  });

  await step("load more follows the cursor without duplicates", async () => {
    await loadAll(page);
    const all = await rows(page);
    assertRows(all, expected(), "all pages");
    assert.equal(new Set(all.map((r) => r.id)).size, shop.length, "no duplicates");
    assert.equal(await page.locator("#count").textContent(), `Showing ${shop.length} messages.`);
  });

  await step("filters: status class, method, path prefix and exact, time range", async () => {
    const cases = [
      [{ status: "4xx" }, (m) => m.response.status_code >= 400 && m.response.status_code < 500],
      [{ status: "4xx", method: "POST" }, (m) => m.method === "POST" && m.response.status_code >= 400 && m.response.status_code < 500],
      [{ method: "DELETE" }, (m) => m.method === "DELETE"],
      [{ path: "/customers" }, (m) => m.path.startsWith("/customers")],
      [{ pathMode: "exact", path: "/orders" }, (m) => m.path === "/orders"],
      [{ from: localInput(shop[10].created_at), to: localInput(shop[20].created_at) }, (m) => m.i >= 10 && m.i < 20],
      [{ status: "1xx" }, () => false],
    ];
    for (const [filters, keep] of cases) {
      await applyFilters(page, filters);
      await loadAll(page);
      assertRows(await rows(page), expected(keep), JSON.stringify(filters));
    }
    assert.ok(await page.getByText("No messages match these filters.").isVisible());
    await page.getByRole("button", { name: "Clear" }).click();
    await settled(page);
    assertRows(await rows(page), expected().slice(0, PAGE_SIZE), "after Clear");
  });

  await step("a detail opens from the keyboard, with masked headers, pretty JSON and cURL", async () => {
    const target = expected((m) => m.method === "POST" && m.request.header["X-Note"] === XSS)[0];
    const row = page.locator(`#messages tbody tr[data-id="${target.id}"]`);
    await row.focus();
    await page.keyboard.press("Enter");
    await page.locator("#detail").waitFor();
    assert.equal(await page.locator("#detail-title").textContent(), `POST ${target.path}`);
    assert.ok(await page.evaluate(() => document.activeElement.id === "detail-title"), "focus moves to the detail");

    const headerRows = await page.$$eval("#request-headers tbody tr", (trs) => trs.map((tr) => [tr.cells[0].textContent, tr.cells[1].textContent]));
    assert.deepEqual(headerRows.find(([name]) => name === "Authorization"), ["Authorization", MASK]);
    assert.deepEqual(headerRows.find(([name]) => name === "X-Note"), ["X-Note", XSS], "markup is shown as text");
    assert.equal(await page.locator("#request-body").textContent(), JSON.stringify(JSON.parse(target.request.body), null, 2));
    assert.equal(await page.locator("#response-body").textContent(), JSON.stringify(JSON.parse(target.response.body), null, 2));
    assert.equal(await page.locator("#detail img").count(), 0, "no element made from message data");

    const curl = await page.locator("#curl").textContent();
    assert.ok(curl.startsWith(`curl -X POST 'https://api.shop.example${target.path}'`) || curl.startsWith(`curl -X POST https://api.shop.example${target.path}`), curl);
    assert.ok(curl.includes(`-H 'Authorization: ${MASK}'`), curl);
    assert.ok(curl.includes(`--data-raw '${target.request.body.replaceAll("'", `'\\''`)}'`), curl);
    assert.ok(!curl.includes("Host:"), "the host is in the URL");
    await page.getByRole("button", { name: "Copy as cURL" }).click();
    await page.getByText(/^(Copied\.|Selected: press Ctrl\+C)/).waitFor();
    if ((await page.locator("#copy-status").textContent()) === "Copied.") {
      assert.equal(await page.evaluate(() => navigator.clipboard.readText()), curl);
    }

    await page.keyboard.press("Escape");
    assert.ok(await page.locator("#detail").isHidden());
    assert.equal(await page.evaluate(() => document.activeElement.dataset.id), target.id, "focus returns to the row");

    // Rows open with a click too; this one makes the screenshot.
    const plain = expected((m) => m.method === "POST" && m.request.header["X-Note"] !== XSS)[0];
    await page.locator(`#messages tbody tr[data-id="${plain.id}"]`).click();
    await page.locator("#detail").waitFor();
    assert.equal(await page.locator("#detail-title").textContent(), `POST ${plain.path}`);
    if (SCREENSHOTS) await page.screenshot({ path: path.join(SCREENSHOTS, "portal-detail.png") });
    await page.getByRole("button", { name: "Close details" }).click();
    assert.ok(await page.locator("#detail").isHidden());
  });

  await step("HAR download of the loaded messages", async () => {
    await loadAll(page);
    const loaded = expected();
    const [download] = await Promise.all([
      page.waitForEvent("download"),
      page.getByRole("button", { name: "Download HAR" }).click(),
    ]);
    assert.match(download.suggestedFilename(), /^reqlog-shop-.*\.har$/);
    const har = JSON.parse(await readFile(await download.path(), "utf8"));
    validateHAR(har, loaded);
  });

  await step("expired, invalid and missing tokens get a clear message", async () => {
    const claims = { acc: "acme", dom: "live", app: "shop", iss: "reqlog", aud: ["reqlog-portal"] };
    const expired = forgeToken({ ...claims, iat: NOW - 7200, exp: NOW - 3600 });
    const tampered = session.token.slice(0, -2) + (session.token.endsWith("AA") ? "BB" : "AA");
    for (const [token, text] of [
      [expired, /^This portal link expired on \d{4}-\d\d-\d\d .*Ask for a new link\.$/],
      [tampered, /^This portal link is not valid\. Ask for a new link\.$/],
      ["", /needs an access link/],
    ]) {
      const tab = await context.newPage(); // a new tab has its own, empty sessionStorage
      await tab.goto(`${base}/portal${token ? `#token=${token}` : ""}`);
      await tab.locator("#fatal").waitFor();
      assert.match(await tab.locator("#fatal-text").textContent(), text);
      assert.ok(await tab.locator("#viewer").isHidden(), "nothing else is shown");
      await tab.close();
    }
  });

  await step("embedding: only the configured frame ancestors may frame the page", async () => {
    const host = await context.newPage();
    await host.goto(`${allowedOrigin}/`);
    const frame = host.frameLocator("#portal");
    await frame.locator("#messages tbody tr").first().waitFor();
    assert.equal(await frame.locator("#messages tbody tr").count(), PAGE_SIZE);

    const blockedHost = await context.newPage();
    const refusal = blockedHost.waitForEvent("console", { predicate: (msg) => msg.text().includes("frame-ancestors"), timeout: 5000 });
    await blockedHost.goto(`http://127.0.0.1:${refused.address().port}/`);
    await refusal;
    assert.equal(await blockedHost.frameLocator("#portal").locator("#messages").count(), 0, "the refused frame shows nothing");
    await host.close();
    await blockedHost.close();
  });

  await step("no script error, dialog, or request to another origin", async () => {
    assert.deepEqual(problems, []);
    assert.ok(!log.some((line) => line.includes(session.token.split(".")[2])), "the token reached the server log");
  });
}

try {
  await main();
} catch {
  failed = true;
} finally {
  for (const cleanup of cleanups) await cleanup().catch((err) => console.error(`cleanup: ${err}`));
}
// The summary line CI runners recognise; a failure outside any step counts too.
console.log(`portal: ${counts.passed} passed, ${counts.failed + (failed && counts.failed === 0 ? 1 : 0)} failed`);
process.exit(failed ? 1 : 0);
