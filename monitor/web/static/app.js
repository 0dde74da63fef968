// stormwatch field app: the camera and location helpers, and the offline queue.
// The form works without this script (a plain multipart post); with it, a
// submission goes through the API (photos first, then the inspection with its
// Idempotency-Key) and, without a network, waits in IndexedDB until the phone
// is online again. The page says how many wait.
// Signing out leaves nothing of the session on the phone: the queue and the
// worker's copies of the pages (the form with its CSRF token) are deleted
// before the post (after asking, when inspections still wait), and the
// answer's Clear-Site-Data deletes them again where the browser knows it.
"use strict";
(function () {
  const DB = "stormwatch", STORE = "queue";
  const csrf = () => (document.querySelector('meta[name="csrf-token"]') || {}).content || "";

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
      t.oncomplete = () => ok(r && r.result);
      t.onerror = () => fail(t.error);
    });
  }
  const queued = () => tx("readonly", (s) => s.getAll());
  const enqueue = (item) => tx("readwrite", (s) => s.put(item));
  const dequeue = (key) => tx("readwrite", (s) => s.delete(key));
  const emptyQueue = () => tx("readwrite", (s) => s.clear());

  async function purge() {
    await emptyQueue();
    if (window.caches) for (const name of await caches.keys()) await caches.delete(name);
  }

  function guardSignOut() {
    const out = document.querySelector("form[action='/signout']");
    if (!out) return;
    out.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const n = (await queued()).length;
      const waits = n === 1 ? "1 inspection has" : n + " inspections have";
      if (n && !confirm(waits + " not been sent yet (no network). Signing out deletes"
                        + " them from this phone. Sign out anyway?")) return;
      try { await purge(); } catch (e) { /* the answer's Clear-Site-Data still clears */ }
      out.submit();  // submit() fires no submit event: this handler does not run again
    });
  }

  async function showQueue() {
    const el = document.getElementById("queue");
    if (!el) return;
    const n = (await queued()).length;
    el.hidden = n === 0;
    el.textContent = n === 1 ? "1 inspection waits to be sent (no network)."
      : n + " inspections wait to be sent (no network).";
    el.dataset.waiting = String(n);
  }

  function collect(form) {
    const f = new FormData(form), data = {
      inspectors: (f.get("inspector") || "").split("&").map((s) => s.trim()).filter(Boolean),
      inspected_at: f.get("inspected_at") || null, kind: f.get("kind") || "routine",
      findings: [], corrective_actions: [], resolves: f.getAll("resolves"),
      notes: f.get("notes") || null, certified: f.get("certified") === "on", location: null,
    };
    for (const el of form.querySelectorAll("select[name$='.condition']")) {
      const id = el.name.slice(2, -".condition".length);
      data.findings.push({ practice: id, condition: el.value, note: f.get("p." + id + ".note") || null });
    }
    const texts = f.getAll("ca_text"), dues = f.getAll("ca_due");
    texts.forEach((t, i) => { if (t.trim()) data.corrective_actions.push({ text: t.trim(), due: dues[i] || null }); });
    if (f.get("lat") && f.get("lon")) {
      data.location = { lat: +f.get("lat"), lon: +f.get("lon"), accuracy_m: f.get("accuracy_m") ? +f.get("accuracy_m") : null };
    }
    const files = [];
    for (const input of form.querySelectorAll("input[type=file]")) {
      for (const file of input.files) {
        const caption = input.name.startsWith("fix.") ? "resolves " + input.name.slice(4)
          : (f.get("caption_" + input.name.replace("photo_", "")) || null);
        files.push({ blob: file, caption });
      }
    }
    return { key: form.querySelector("[name=idempotency_key]").value, site: form.dataset.site, data, files };
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
    const li = (t) => { const e = document.createElement("li"); e.textContent = t; return e; };
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

  async function flush() {
    if (!navigator.onLine) return;
    for (const item of await queued()) {
      let r;
      try { r = await send(item); } catch (e) { break; }  // still no network
      // 409 (being recorded), 401 (signed out) and 429 (too many photos for now) are
      // worth another try later: the item stays queued. Any other 4xx never will be.
      if (r.ok || (r.status >= 400 && r.status < 500 && ![401, 409, 429].includes(r.status))) {
        await dequeue(item.key);
        if (!r.ok) {
          const err = await r.json().catch(() => ({ error: r.statusText }));
          alert("A queued inspection was refused: " + err.error);
        }
      }
    }
    await showQueue();
  }

  function setup() {
    const form = document.getElementById("inspect");
    if (form) {
      form.addEventListener("submit", async (ev) => {
        ev.preventDefault();
        const item = collect(form);
        if (!item.data.certified) { alert("Tick the statement to certify the inspection."); return; }
        let r = null;
        if (navigator.onLine) { try { r = await send(item); } catch (e) { r = null; } }
        if (r === null) {
          await enqueue(item);
          await showQueue();
          form.querySelector("[name=idempotency_key]").value = crypto.randomUUID();
          return;
        }
        const body = await r.json().catch(() => ({ error: r.statusText }));
        if (r.ok) showAnswer(body); else alert("Not recorded: " + body.error);
      });
      const add = document.getElementById("add-action");
      add.hidden = false;
      add.addEventListener("click", () => {
        const rows = document.querySelectorAll(".action-row");
        const copy = rows[rows.length - 1].cloneNode(true);
        copy.querySelectorAll("input").forEach((i) => { i.id = ""; if (i.name === "ca_text") i.value = ""; });
        document.getElementById("actions").append(copy);
      });
      document.getElementById("locate").addEventListener("click", () => {
        const where = document.getElementById("where");
        if (!navigator.geolocation) { where.textContent = "No location on this device."; return; }
        where.textContent = "Locating…";
        navigator.geolocation.getCurrentPosition((p) => {
          document.getElementById("lat").value = p.coords.latitude;
          document.getElementById("lon").value = p.coords.longitude;
          document.getElementById("accuracy_m").value = p.coords.accuracy;
          where.textContent = p.coords.latitude.toFixed(5) + ", " + p.coords.longitude.toFixed(5) + " (±" + Math.round(p.coords.accuracy) + " m)";
        }, (e) => { where.textContent = "Location refused: " + e.message; }, { enableHighAccuracy: true, timeout: 15000 });
      });
    }
    guardSignOut();
    if ("serviceWorker" in navigator) navigator.serviceWorker.register("/sw.js", { scope: "/" }).catch(() => {});
    window.addEventListener("online", flush);
    showQueue().then(flush);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setup); else setup();
  window.stormwatchFlush = flush;
})();
