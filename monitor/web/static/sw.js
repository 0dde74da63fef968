// stormwatch service worker: keeps the pages and assets so the form opens without a network.
// Network first (the state shown must be current), the cached copy when offline.
"use strict";
const CACHE = "stormwatch-v1";
const ASSETS = ["/static/app.js", "/static/app.css", "/static/manifest.json"];
self.addEventListener("install", (e) => { e.waitUntil(caches.open(CACHE).then((c) => c.addAll(ASSETS))); self.skipWaiting(); });
self.addEventListener("activate", (e) => { e.waitUntil(self.clients.claim()); });
self.addEventListener("fetch", (e) => {
  const req = e.request;
  if (req.method !== "GET" || new URL(req.url).origin !== self.location.origin || req.url.includes("/api/")) return;
  e.respondWith(fetch(req).then((res) => {
    if (res.ok && res.type === "basic") { const copy = res.clone(); caches.open(CACHE).then((c) => c.put(req, copy)); }
    return res;
  }).catch(() => caches.match(req).then((hit) => hit || new Response("Offline, and this page was never opened here.", { status: 503, headers: { "Content-Type": "text/plain" } }))));
});
