// stormwatch field app: the camera and location helpers, and the offline queue.
// The form works without this script (a plain multipart post); with it, a
// submission goes through the API (photos first, then the inspection with its
// Idempotency-Key) and, without a network, waits in IndexedDB until the phone
// is online again.
// A queued submission is answered at the button (#submit-status, where the
// thumb is) and locks the form: a second tap, or the same form opened again
// while it waits, can only ever send that one entry under its one key (the
// queue is keyed by the idempotency key the server put in the form; "Record
// another inspection" is the one way to a fresh key). The pages list what is
// on the phone: waiting, sent (kept a day, with a link to the site), or
// refused by the server (4xx: never retried; its words shown and its data kept,
// so "Fix and resend" opens the form filled with it).
// Signing out leaves nothing of the session on the phone: the queue and the
// worker's copies of the pages (the form with its CSRF token) are deleted
// before the post (after asking, when inspections still wait), and the
// answer's Clear-Site-Data deletes them again where the browser knows it.
"use strict";
(function () {
  const DB = "stormwatch", STORE = "queue";
  const KEEP_SENT_MS = 24 * 3600 * 1000, RETRY_MS = 30000;
  const WAITING_NOTE = "No network: this inspection is saved on this phone and will be sent"
    + " when the network is back. Do not record it again.";
  const LOCKED_LABEL = "Saved on this phone \u2014 waiting for network";
  const csrf = () => (document.querySelector('meta[name="csrf-token"]') || {}).content || "";
  const $ = (id) => document.getElementById(id);
  const newKey = () => (crypto.randomUUID ? crypto.randomUUID()  // a secure context's
    : Array.from(crypto.getRandomValues(new Uint8Array(18)), (b) => b.toString(16).padStart(2, "0")).join(""));

  // ------------------------------------------------------------------ the queue (IndexedDB)
  // An entry: {key, site, site_name, timezone, data (the API's JSON but photos), files
  // [{blob, caption, field}], photos (count), state "waiting" | "sent" | "refused",
  // queued_ms, sent_ms, error}. Entries of an older page have no state: they wait.
  function db() {
    return new Promise((ok, fail) => {
      const req = indexedDB.open(DB, 1);
      req.onupgradeneeded = () => req.result.createObjectStore(STORE, { keyPath: "key" });
      req.onsuccess = () => ok(req.result);
      req.onerror = () => fail(req.error);
    });
  }
  async function tx(mode, fn) {
    const d = await db();
    return new Promise((ok, fail) => {
      const t = d.transaction(STORE, mode), s = t.objectStore(STORE), r = fn(s);
      t.oncomplete = () => { d.close(); ok(r && r.result); };
      t.onerror = () => { d.close(); fail(t.error); };
    });
  }
  const stateOf = (item) => item.state || "waiting";
  const entries = () => tx("readonly", (s) => s.getAll());
  const put = (item) => tx("readwrite", (s) => s.put(item));
  const remove = (key) => tx("readwrite", (s) => s.delete(key));
  const emptyQueue = () => tx("readwrite", (s) => s.clear());
  const waiting = async () => (await entries()).filter((i) => stateOf(i) === "waiting");
  const unsent = async () => (await entries()).filter((i) => stateOf(i) !== "sent");

  async function purge() {
    await emptyQueue();
    if (window.caches) for (const name of await caches.keys()) await caches.delete(name);
  }

  function guardSignOut() {
    const out = document.querySelector("form[action='/signout']");
    if (!out) return;
    out.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const n = (await unsent()).length;
      const waits = n === 1 ? "1 inspection has" : n + " inspections have";
      if (n && !confirm(waits + " not been sent yet (no network). Signing out deletes"
                        + " them from this phone. Sign out anyway?")) return;
      try { await purge(); } catch (e) { /* the answer's Clear-Site-Data still clears */ }
      out.submit();  // submit() fires no submit event: this handler does not run again
    });
  }

  // ------------------------------------------------------------------ what the pages show
  function el(tag, text, cls) {
    const e = document.createElement(tag);
    if (text) e.textContent = text;
    if (cls) e.className = cls;
    return e;
  }
  function when(ms, tz) {  // the phone's moment at the site's wall clock
    const opts = { weekday: "short", month: "short", day: "numeric", hour: "numeric", minute: "2-digit" };
    try { return new Date(ms).toLocaleString("en-US", Object.assign({ timeZone: tz }, opts)); }
    catch (e) { return new Date(ms).toLocaleString("en-US", opts); }
  }
  function wallClock(text) {  // "YYYY-MM-DDTHH:MM", the site's wall clock, as written
    const m = /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d)/.exec(text || "");
    return m ? when(Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5]), "UTC") : "time not given";
  }
  const sitePage = (item) => "/sites/" + encodeURIComponent(item.site);

  function row(item) {
    const li = el("li", "", "queued " + stateOf(item));
    li.dataset.key = item.key;
    const n = item.photos || 0;
    li.append(el("strong", item.site_name || item.site), " \u2014 inspected "
      + wallClock(item.data.inspected_at) + ", " + (n === 1 ? "1 photo" : n + " photos") + ". ");
    const state = stateOf(item);
    if (state === "waiting") {
      li.append(el("span", "Waiting since " + when(item.queued_ms, item.timezone) + ".", "state"));
    } else if (state === "sent") {
      li.append(el("span", "Sent " + when(item.sent_ms, item.timezone) + ". ", "state good"));
      const a = el("a", "See the site page");
      a.href = sitePage(item);
      li.append(a, " ", forget(item, "Hide", null));
    } else {
      li.append(el("span", "Refused by the server: " + sentence(item.error), "state bad"), " ");
      const fix = el("a", "Fix and resend", "button");
      fix.href = sitePage(item) + "/inspect#fix=" + encodeURIComponent(item.key);
      li.append(fix, " ", forget(item, "Delete it",
        "Delete this inspection from the phone? It was never recorded."));
    }
    return li;
  }

  function forget(item, label, ask) {  // a button taking the entry off the phone
    const b = el("button", label, "link-button");
    b.type = "button";
    b.addEventListener("click", async () => {
      if (ask && !confirm(ask)) return;
      await remove(item.key);
      await showQueue();
    });
    return b;
  }

  async function showQueue() {
    const box = $("queue");
    if (!box) return;
    const now = Date.now(), all = [];
    for (const item of await entries()) {
      if (stateOf(item) === "sent" && now - item.sent_ms > KEEP_SENT_MS) await remove(item.key);
      else all.push(item);
    }
    all.sort((a, b) => (a.queued_ms || 0) - (b.queued_ms || 0));
    const n = all.filter((i) => stateOf(i) === "waiting").length;
    const refused = all.filter((i) => stateOf(i) === "refused").length;
    const words = [];
    if (n) words.push(n === 1 ? "1 inspection waits to be sent (no network)."
      : n + " inspections wait to be sent (no network).");
    if (refused) words.push(refused === 1 ? "1 inspection was refused by the server: fix and resend it."
      : refused + " inspections were refused by the server: fix and resend them.");
    // The form lists them by its button; every other page at its top.
    const here = $("waiting"), list = (here || box).querySelector(".waiting-list");
    if (!words.length && all.length && !here) words.push("Sent from this phone:");
    const count = $("queue-count") || box;
    count.textContent = words.join(" ");
    box.hidden = words.length === 0;
    box.dataset.waiting = String(n);
    box.classList.toggle("settled", !n && !refused);  // nothing left to worry about
    const other = here && box.querySelector(".waiting-list");
    if (other) other.replaceChildren();
    if (here) here.hidden = all.length === 0;
    if (list) list.replaceChildren(...all.map(row));
    return all;
  }

  // ------------------------------------------------------------------ the form
  function collect(form) {
    const f = new FormData(form), data = {
      inspectors: (f.get("inspector") || "").split("&").map((s) => s.trim()).filter(Boolean),
      inspected_at: f.get("inspected_at") || null, kind: f.get("kind") || "routine",
      findings: [], corrective_actions: [], resolves: f.getAll("resolves"),
      notes: f.get("notes") || null, certified: f.get("certified") === "on", location: null,
    };
    for (const sel of form.querySelectorAll("select[name$='.condition']")) {
      const id = sel.name.slice(2, -".condition".length);
      data.findings.push({ practice: id, condition: sel.value, note: f.get("p." + id + ".note") || null });
    }
    const texts = f.getAll("ca_text"), dues = f.getAll("ca_due"), kinds = f.getAll("ca_kind");
    texts.forEach((t, i) => {
      if (!t.trim()) return;
      const a = { text: t.trim(), due: dues[i] || null };
      if (kinds[i] === "maintenance") a.kind = "maintenance";  // due by its own rule
      data.corrective_actions.push(a);
    });
    if (f.get("lat") && f.get("lon")) {
      data.location = { lat: +f.get("lat"), lon: +f.get("lon"), accuracy_m: f.get("accuracy_m") ? +f.get("accuracy_m") : null };
    }
    const files = [];
    for (const input of form.querySelectorAll("input[type=file]")) {
      for (const file of input.files) {
        const caption = input.name.startsWith("fix.") ? "resolves " + input.name.slice(4)
          : (f.get("caption_" + input.name.replace("photo_", "")) || null);
        files.push({ blob: file, caption, field: input.name });
      }
    }
    return { key: keyOf(form), site: form.dataset.site, site_name: form.dataset.siteName,
             timezone: form.dataset.timezone, data, files, photos: files.length };
  }
  const keyOf = (form) => form.querySelector("[name=idempotency_key]").value;

  function fill(form, item) {  // the form as it was when the entry was made
    const d = item.data, set = (name, v) => { const c = form.elements.namedItem(name); if (c && v != null) c.value = v; };
    set("inspector", d.inspectors.join(" & "));
    set("inspected_at", d.inspected_at);
    set("kind", d.kind);
    set("notes", d.notes || "");
    for (const f of d.findings) { set("p." + f.practice + ".condition", f.condition); set("p." + f.practice + ".note", f.note || ""); }
    for (const box of form.querySelectorAll("[name=resolves]")) box.checked = d.resolves.includes(box.value);
    d.corrective_actions.forEach((a, i) => {
      while (form.querySelectorAll(".action-row").length <= i) $("add-action").click();
      const r = form.querySelectorAll(".action-row")[i];
      r.querySelector("[name=ca_text]").value = a.text;
      r.querySelector("[name=ca_due]").value = a.due || "";
      const kind = r.querySelector("[name=ca_kind]");
      if (kind) kind.value = a.kind || "corrective";
    });
    if (d.location) { set("lat", d.location.lat); set("lon", d.location.lon); set("accuracy_m", d.location.accuracy_m); }
    form.querySelector("[name=certified]").checked = !!d.certified;
    for (const p of item.files || []) {
      const input = form.elements.namedItem(p.field);
      if (!input || !window.DataTransfer) continue;
      const dt = new DataTransfer();
      dt.items.add(new File([p.blob], "photo", { type: p.blob.type }));
      input.files = dt.files;
      if (p.field.startsWith("photo_")) set("caption_" + p.field.slice(6), p.caption || "");
    }
    form.querySelector("[name=idempotency_key]").value = item.key;
  }

  function say(text, cls, link) {  // the answer at the button, brought into view
    const status = $("submit-status");
    status.className = "submit-status " + (cls || "");
    status.replaceChildren(text);
    if (link) { const a = el("a", link.text); a.href = link.href; status.append(" ", a); }
    status.scrollIntoView({ block: "center" });
  }

  const sentence = (text) => String(text).replace(/[^.!?]$/, "$&.");
  const refusal = (error) => "The server refused this inspection: " + sentence(error)
    + " Fix it here and record it again.";

  function lock(form, label) {
    form.dataset.state = "locked";
    for (const c of form.elements) if (c.type !== "hidden") c.disabled = true;
    form.querySelector("button[type=submit]").textContent = label;
    $("another").hidden = false;
  }

  function unlock(form) {
    delete form.dataset.state;
    for (const c of form.elements) c.disabled = false;
    form.querySelector("button[type=submit]").textContent = "Record inspection";
  }

  function fresh(form) {  // "Record another inspection": an empty form with a key of its own
    form.reset();
    unlock(form);
    form.querySelector("[name=idempotency_key]").value = newKey();
    $("another").hidden = true;
    $("submit-status").replaceChildren();
    form.scrollIntoView({ block: "start" });
  }

  function refusedKey(form, key, error) {
    // A refusal records nothing and frees its key for the fixed inspection, except when
    // the key itself was at fault (used with another inspection): then a fresh one, and
    // the refused entry goes once the fixed one is queued or sent.
    if (!String(error).startsWith("Idempotency-Key:")) return;
    form.querySelector("[name=idempotency_key]").value = newKey();
    form.dataset.replaces = key;
  }
  async function replaced(form) {
    if (form.dataset.replaces) await remove(form.dataset.replaces);
    delete form.dataset.replaces;
  }

  const sameData = (a, b) => a.site === b.site && JSON.stringify(a.data) === JSON.stringify(b.data)
    && a.photos === b.photos;

  async function queue(form, item) {
    // One entry per key (put replaces), and the same inspection under another key is
    // the entry already there: never a second copy.
    const twin = (await waiting()).find((w) => w.key !== item.key && sameData(w, item));
    if (twin) form.querySelector("[name=idempotency_key]").value = twin.key;
    else await put(Object.assign(item, { state: "waiting", queued_ms: Date.now() }));
    await replaced(form);
    lock(form, LOCKED_LABEL);
    say(WAITING_NOTE, "waits");
    await showQueue();
  }

  async function submit(form) {
    if (form.dataset.state === "sending") return;  // the first tap is on its way
    if (form.dataset.state) { say($("submit-status").textContent || WAITING_NOTE, "waits"); return; }
    const item = collect(form);
    if (!item.data.certified) { say("Tick the statement to certify the inspection.", "bad"); return; }
    form.dataset.state = "sending";
    const button = form.querySelector("button[type=submit]");
    button.disabled = true;
    button.textContent = "Sending\u2026";
    let r = null;
    if (navigator.onLine) { try { r = await send(item); } catch (e) { r = null; } }
    if (r === null) { delete form.dataset.state; await queue(form, item); return; }
    const body = await r.json().catch(() => ({ error: r.statusText }));
    if (r.ok) { await settled(item.key, "sent"); await replaced(form); showAnswer(body); return; }
    unlock(form);
    refusedKey(form, item.key, body.error);
    say("Not recorded: " + body.error, "bad");
  }

  async function settled(key, state, error) {  // a queued entry's outcome, if it was queued
    const item = (await entries()).find((i) => i.key === key);
    if (!item) return null;
    Object.assign(item, { state, error: error || null, sent_ms: Date.now() });
    if (state === "sent") item.files = [];  // the photos are on the server: free the phone
    await put(item);
    return item;
  }

  async function send(item) {
    const photos = [];
    for (const p of item.files) {
      const body = new FormData();
      body.append("photo", p.blob, "photo");
      const r = await fetch("/api/v1/photos", { method: "POST", body, headers: { "X-CSRF-Token": csrf() }, credentials: "same-origin" });
      if (!r.ok) return r;
      photos.push({ sha256: (await r.json()).sha256, caption: p.caption });
    }
    return fetch("/api/v1/sites/" + encodeURIComponent(item.site) + "/inspections", {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "Idempotency-Key": item.key, "X-CSRF-Token": csrf() },
      body: JSON.stringify(Object.assign({}, item.data, { photos })),
    });
  }

  function showAnswer(answer) {
    const main = document.querySelector("main");
    const li = (t) => el("li", t);
    main.innerHTML = "<h1>Inspection recorded</h1><h2>Clocks closed</h2><ul id='closed'></ul><h2>Corrective actions</h2><ul id='actions'></ul>";
    const closed = main.querySelector("#closed"), actions = main.querySelector("#actions");
    // The clock by name and the action by its text (the answer's words, not its ids).
    const upper = (t) => t.charAt(0).toUpperCase() + t.slice(1);
    (answer.closed || []).forEach((c) => closed.append(li(upper(c.name || c.clock_id) + ": " + c.clock + " inspection done " + (c.outcome === "met" ? "on time" : "LATE") + " (due " + (c.due_words || c.due_local) + ")")));
    if (!(answer.closed || []).length) closed.append(li("No open clock closed."));
    (answer.actions || []).forEach((a) => actions.append(li(a.text + ": " + (a.due ? "due " + a.due_words : "no due date"))));
    if (!(answer.corrective_actions || []).length) actions.append(li("None asked for."));
    // The way on, as the server's answer page has it.
    const site = "/sites/" + encodeURIComponent(answer.site);
    [["Record another inspection", site + "/inspect", "button primary"], ["Back to the site", site, ""]].forEach(([t, href, cls]) => {
      const p = document.createElement("p"), a = document.createElement("a");
      a.textContent = t; a.href = href; a.className = cls; p.append(a); main.append(p);
    });
  }

  function answered(item) {  // the locked form whose entry was just sent or refused
    const form = $("inspect");
    if (!item || !form || keyOf(form) !== item.key || form.dataset.state !== "locked") return;
    if (item.state === "sent") {
      form.querySelector("button[type=submit]").textContent = "Recorded";
      say("Sent: this inspection is recorded.", "good", { text: "See the site page", href: sitePage(item) });
    } else {
      unlock(form);
      refusedKey(form, item.key, item.error);
      say(refusal(item.error), "bad");
    }
  }

  let flushing = null;
  function flush() {  // one at a time: two sends of one key would only meet a 409
    if (!flushing) flushing = sendWaiting().finally(() => { flushing = null; });
    return flushing;
  }
  async function sendWaiting() {
    if (navigator.onLine) {
      for (const item of await waiting()) {
        let r;
        try { r = await send(item); } catch (e) { break; }  // still no network
        // 409 (being recorded), 401 (signed out) and 429 (too many photos for now) are
        // worth another try later: the item stays queued. Any other 4xx never will be.
        if (r.ok) answered(await settled(item.key, "sent"));
        else if (r.status >= 400 && r.status < 500 && ![401, 409, 429].includes(r.status)) {
          const err = await r.json().catch(() => ({ error: r.status + " " + r.statusText }));
          answered(await settled(item.key, "refused", String(err.error)));
        }
      }
    }
    await showQueue();
  }

  async function reopened(form) {  // the same form again while an entry of it is on the phone
    const mine = (await entries()).filter((i) => i.site === form.dataset.site);
    const fix = /^#fix=(.+)$/.exec(location.hash);
    const refused = fix && mine.find((i) => i.key === decodeURIComponent(fix[1]) && stateOf(i) === "refused");
    if (refused) {
      fill(form, refused);
      refusedKey(form, refused.key, refused.error);
      say(refusal(refused.error), "bad");
      return;
    }
    const waits = mine.filter((i) => stateOf(i) === "waiting").sort((a, b) => b.queued_ms - a.queued_ms)[0];
    if (waits) { fill(form, waits); lock(form, LOCKED_LABEL); say(WAITING_NOTE, "waits"); }
  }

  function setupForm(form) {
    form.addEventListener("submit", (ev) => { ev.preventDefault(); submit(form); });
    const add = $("add-action");
    add.hidden = false;
    add.addEventListener("click", () => {
      const rows = document.querySelectorAll(".action-row");
      const copy = rows[rows.length - 1].cloneNode(true);
      copy.querySelectorAll("input").forEach((i) => { i.id = ""; if (i.name === "ca_text") i.value = ""; });
      $("actions").append(copy);
    });
    $("another").addEventListener("click", () => fresh(form));
    window.addEventListener("hashchange", () => location.reload());  // "Fix and resend" here
    $("locate").addEventListener("click", () => {
      const where = $("where");
      if (!navigator.geolocation) { where.textContent = "No location on this device."; return; }
      where.textContent = "Locating…";
      navigator.geolocation.getCurrentPosition((p) => {
        $("lat").value = p.coords.latitude;
        $("lon").value = p.coords.longitude;
        $("accuracy_m").value = p.coords.accuracy;
        where.textContent = p.coords.latitude.toFixed(5) + ", " + p.coords.longitude.toFixed(5) + " (±" + Math.round(p.coords.accuracy) + " m)";
      }, (e) => { where.textContent = "Location refused: " + e.message; }, { enableHighAccuracy: true, timeout: 15000 });
    });
    return reopened(form);
  }

  async function setup() {
    const form = $("inspect");
    guardSignOut();
    if ("serviceWorker" in navigator) navigator.serviceWorker.register("/sw.js", { scope: "/" }).catch(() => {});
    window.addEventListener("online", flush);
    setInterval(() => { waiting().then((w) => { if (w.length) flush(); }); }, RETRY_MS);
    if (form) await setupForm(form);
    await showQueue();
    await flush();
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setup); else setup();
  window.stormwatchFlush = flush;
})();
