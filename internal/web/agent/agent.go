// Package agent serves the in-page agent, the script a site's own page
// loads to queue an action ("Book") without leaving the page: the module at
// /agent/v1/waitroom.js, the same code as a classic script that sets
// window.waitroom at /agent/v1/waitroom.classic.js, and the versioned
// addresses of both at /agent/v1/version.
//
// Caching: an address whose ?v= is the current content hash is cached for
// a day (public, max-age=86400); any other (none, or a release's that is
// gone) is revalidated on every load (no-cache, with an ETag, so a 304), so
// a site that pasted the bare address picks up a new release at once, and
// one that uses the versioned address within the day it is cached, or at
// once when its pages ask /agent/v1/version for the current one.
package agent

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/waitroom/waitroom/web"
)

// Paths of the agent on waitroom's host.
const (
	ModulePath  = "/agent/v1/waitroom.js"
	ClassicPath = "/agent/v1/waitroom.classic.js"
	VersionPath = "/agent/v1/version"
)

// moduleMark starts the module's own lines (its exports, import.meta),
// which the classic script leaves out.
var moduleMark = []byte("\n// ---- module ----\n")

// MaxAge is how long a versioned address is cached.
const MaxAge = 24 * time.Hour

// Script is the agent, in its two forms, with its content hash.
type Script struct {
	module, classic []byte
	v               string // the content hash: ?v= of the cached addresses
	tag             string // the ETag of both forms (they change together)
}

// New makes the agent's two forms from the module's source: the classic
// form is the source up to moduleMark, wrapped in a function that sets
// window.waitroom from the script's own address.
func New(src []byte) (*Script, error) {
	i := bytes.Index(src, moduleMark)
	if i < 0 {
		return nil, errors.New("agent: the source has no module mark")
	}
	var classic bytes.Buffer
	classic.WriteString("(function () {\n'use strict';\n")
	classic.Write(src[:i])
	classic.WriteString("\nconst s = document.currentScript;\nwindow.waitroom = waitroomAgent(s && s.src ? s.src : location.href);\n})();\n")
	sum := sha256.Sum256(src)
	v := base64.RawURLEncoding.EncodeToString(sum[:9])
	return &Script{module: src, classic: classic.Bytes(), v: v, tag: `"` + v + `"`}, nil
}

// Default is the agent embedded in the binary (web.Agent).
var Default = sync.OnceValue(func() *Script {
	src, err := web.Agent.ReadFile("agent/waitroom.js")
	if err != nil {
		panic(err) // embedded: present in every build
	}
	s, err := New(src)
	if err != nil {
		panic(err) // the embedded file has its mark (TestEmbedded)
	}
	return s
})

// V is the content hash that the cached addresses carry as ?v=.
func (s *Script) V() string { return s.v }

// Module serves the ES module.
func (s *Script) Module(w http.ResponseWriter, r *http.Request) { s.serve(w, r, s.module) }

// Classic serves the classic script, which sets window.waitroom.
func (s *Script) Classic(w http.ResponseWriter, r *http.Request) { s.serve(w, r, s.classic) }

func (s *Script) serve(w http.ResponseWriter, r *http.Request, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "text/javascript; charset=utf-8")
	h.Set("ETag", s.tag)
	if r.URL.RawQuery != "" && r.URL.Query().Get("v") == s.v {
		h.Set("Cache-Control", "public, max-age=86400")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
}

// VersionResponse names the current agent's addresses, each with its
// ?v=, for a site that renders its pages (or builds them) to load.
type VersionResponse struct {
	V       string `json:"v"`
	Module  string `json:"module"`
	Classic string `json:"classic"`
}

// Version answers the current addresses; never cached, so a release is
// seen at the next ask.
func (s *Script) Version(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-cache")
	_ = json.NewEncoder(w).Encode(VersionResponse{V: s.v, Module: ModulePath + "?v=" + s.v, Classic: ClassicPath + "?v=" + s.v})
}
