// Package web holds the browser pages of waitroom: the waiting page shown at
// /q/{queue} and the back office at /admin, and the in-page agent that sites
// load from /agent/v1/ (agent/waitroom.js).
//
// The pages are plain HTML, CSS and JavaScript with no build step, so what is
// in static/ is exactly what browsers get. Each page's script is a set of ES
// modules, one per concern: waiting.js and admin.js are the entries, which
// import the others by relative path (waiting-*.js, admin-*.js and the shared
// i18n.js, storage.js, dom.js). Everything loads from /_waitroom/static/,
// because the server's Content-Security-Policy allows scripts and styles from
// 'self' only, with one exception. The words are in
// static/i18n/{page}/{lang}.json.
//
// The exception is each page's rescue, one inline classic script before the
// modules (the same in pages/script.html and static/admin.html, allowed by
// its hash in the policy). If one module fails to load, none runs and the
// page stays on the server's "Joining the line…" for good; Chromium drops
// every request in flight when the network changes under it (a phone
// moving from Wi-Fi to mobile data, an interface coming or going:
// net::ERR_NETWORK_CHANGED, which the page tests see whenever Docker starts
// a container). A browser keeps a module that failed for the document's
// life, so the rescue reloads the page after 1 s, 2 s, 4 s ... up to 30 s,
// counted in sessionStorage so that a module really missing does not
// reload in a tight loop; the entries forget the count once they run. It
// is inline because a rescue loaded as a file of its own was lost with the
// modules it was there for.
//
// The waiting page itself is a Go html/template, pages/waiting.html, which
// the server renders (internal/web/pages) with pages/script.html, the module
// tags that run the line.
package web

import "embed"

// Static holds the files under static/ (admin.html, the modules,
// pow-worker.js, style.css and the message catalogs). Paths keep the
// "static/" prefix; use fs.Sub to serve them from /static/.
//
//go:embed static
var Static embed.FS

// Pages holds pages/: the waiting page's template and its script tags.
//
//go:embed pages
var Pages embed.FS

// Catalogs holds the waiting page's catalogs alone (static/i18n/waiting),
// for what speaks the page's words without serving the rest of static/:
// the "briefly unavailable" page (internal/web/outage), which the gate package
// shows and so links into every site that imports it.
//
//go:embed static/i18n/waiting
var Catalogs embed.FS

// Agent holds agent/waitroom.js, the in-page agent that a site's own pages
// load (internal/web/agent serves it): one module, with no imports, which
// speaks the waiting page's catalogs and runs its pow-worker.js.
//
//go:embed agent/waitroom.js
var Agent embed.FS
