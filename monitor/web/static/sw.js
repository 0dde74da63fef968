// stormwatch service worker: keeps the pages and assets so the form opens without a network.
// Network first (the state shown must be current), the cached copy when offline.
// Sign-in pages, alert links and contractor links are never kept (their address is a
// token, or they answer no-store), and sign-out
// deletes every copy (app.js, and the answer's Clear-Site-Data).
"use strict";
const CACHE = "stormwatch-v3";
const ASSETS = ["/static/app.js", "/static/app.css", "/static/manifest.json"];
const NEVER = ["/signin", "/a/", "/c/", "/api/"];
self.addEventListener("install", (e) => { e.waitUntil(caches.open(CACHE).then((c) => c.addAll(ASSETS))); self.skipWaiting(); });
self.addEventListener("activate", (e) => {
  // Copies of an older worker go: they were made under rules this one does not keep.
  e.waitUntil(caches.keys().then((names) => Promise.all(names.filter((n) => n !== CACHE).map((n) => caches.delete(n))))
    .then(() => self.clients.claim()));
});
self.addEventListener("fetch", (e) => {
  const req = e.request, url = new URL(req.url);
  if (req.method !== "GET" || url.origin !== self.location.origin || NEVER.some((p) => url.pathname.startsWith(p))) return;
  e.respondWith(fetch(req).then((res) => {
    if (res.ok && res.type === "basic" && !/no-store/.test(res.headers.get("Cache-Control") || "")) { const copy = res.clone(); caches.open(CACHE).then((c) => c.put(req, copy)); }
    return res;
  }).catch(() => caches.match(req).then((hit) => hit || new Response("Offline, and this page was never opened here.", { status: 503, headers: { "Content-Type": "text/plain" } }))));
});
