// Package web holds the browser pages of waitroom: the waiting page shown at
// /q/{queue} and the back office at /admin.
//
// The pages are plain HTML, CSS and JavaScript with no build step, so what is
// in static/ is exactly what browsers get. They load every script and style
// from /static/... because the server's Content-Security-Policy forbids inline
// scripts and styles.
package web

import "embed"

// Static holds the files under static/ (waiting.html, admin.html, their
// scripts and style.css). Paths keep the "static/" prefix; use fs.Sub to serve
// them from /static/.
//
//go:embed static
var Static embed.FS
