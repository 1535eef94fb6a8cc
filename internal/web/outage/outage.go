// Package outage is what a person sees while the waiting room cannot
// answer (its Redis is away): a page in their language that says so,
// says what becomes of their place, and tries again by itself with a
// growing wait, until the room answers and the page reloads into whatever
// the address shows then (the waiting page, the site behind the gate).
// API clients get JSON from their own callers instead; WantsPage tells
// the two apart.
//
// The page carries its own style and script, so it works where nothing
// else of waitroom is served (the gate in front of a site's own Go
// server), and sends its own Content-Security-Policy, which allows
// exactly those two inline blocks by hash: the waitroom's own policy
// allows no inline code. Without script it still reloads itself (a
// <noscript> refresh after Retry-After), only without the backoff.
//
// Every page (language × visitor × first wait) is rendered once, on
// first use: serving one is a map lookup and a write, whatever a crowd of
// reloading browsers asks for while the room is away.
package outage

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"

	// html/template without method calls, as internal/web/pages uses: the
	// standard one makes the linker keep every exported method.
	template "github.com/DataDog/datadog-agent/pkg/template/html"

	"github.com/waitroom/waitroom/internal/web/i18n"
	"github.com/waitroom/waitroom/web"
)

// Visitor is whom the page speaks to, which decides what it can promise
// about their place.
type Visitor int

const (
	// Joining: the waiting page, opened without a place (no place
	// cookie): they can join once the room is back.
	Joining Visitor = iota
	// InLine: the waiting page, opened with a place cookie: the place is
	// kept (nobody is admitted while the room is away).
	InLine
	// AtGate: a page behind the gate, which cannot check entry passes:
	// the visitor may or may not hold a place.
	AtGate
	visitors // the number of Visitors
)

// bodyKey is each Visitor's message in the waiting catalogs.
var bodyKey = [visitors]string{
	Joining: "unavailableJoin",
	InLine:  "unavailablePlaceKept",
	AtGate:  "unavailableGate",
}

// The page's waits, in seconds. The first is Retry-After, FirstWait plus
// up to FirstSpread (so browsers that met the outage together do not all
// come back in the same second); each later one about doubles from
// BackoffStart, with ±20 % jitter, up to BackoffCap (page.js).
const (
	FirstWait    = 4
	FirstSpread  = 2
	BackoffStart = 4
	BackoffCap   = 60
)

//go:embed page.html
var pageHTML string

//go:embed page.css
var pageCSS string

//go:embed page.js
var pageJS string

// WantsPage reports whether r should get the page rather than JSON: a
// browser navigating (GET or HEAD, no Authorization) that did not ask for
// JSON (Accept) and is not a script's fetch (Sec-Fetch-Mode other than
// navigate; absent from older browsers and from tools, which get the page
// unless they ask for JSON).
func WantsPage(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	if r.Header.Get("Authorization") != "" || strings.Contains(r.Header.Get("Accept"), "application/json") {
		return false
	}
	mode := r.Header.Get("Sec-Fetch-Mode")
	return mode == "" || mode == "navigate"
}

// Handler answers every request with the page for v (Write): the gate's
// Options.Unavailable.
func Handler(v Visitor) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { Write(w, r, v) })
}

// Write answers r with the page for v: 503, in r's language
// (i18n.FromRequest), with Retry-After.
func Write(w http.ResponseWriter, r *http.Request, v Visitor) {
	p := built()
	lang := i18n.FromRequest(r)
	first := FirstWait + rand.IntN(FirstSpread+1)
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Retry-After", strconv.Itoa(first))
	h.Set("Content-Language", lang)
	// Set, not added: replaces a policy a router set for its own pages.
	h.Set("Content-Security-Policy", p.csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(http.StatusServiceUnavailable)
	if r.Method != http.MethodHead {
		_, _ = w.Write(p.page(lang, v, first))
	}
}

// pages are every page, rendered, and the policy that lets them run.
type pages struct {
	csp      string
	rendered map[pageKey][]byte
}

type pageKey struct {
	lang    string
	visitor Visitor
	first   int
}

func (p *pages) page(lang string, v Visitor, first int) []byte {
	if b, ok := p.rendered[pageKey{lang, v, first}]; ok {
		return b
	}
	return p.rendered[pageKey{i18n.Langs[0], AtGate, FirstWait}]
}

// built is the rendered pages. The template, style, script and catalogs
// are embedded and rendered by the package's tests in every language, so
// an error here is a build's, not a request's.
var built = sync.OnceValue(func() *pages {
	p, err := build()
	if err != nil {
		panic(err)
	}
	return p
})

// data is what page.html is given.
type data struct {
	Lang, Title, Body               string
	RetryIn, RetryInFirst, Retrying string // RetryIn keeps its {s}: the script fills it
	RetryNow                        string
	First, Start, Cap               int
	CSS                             template.CSS
	JS                              template.JS
}

// messages are the waiting page's catalogs, whose unavailable* keys the
// page speaks.
func messages() (*i18n.Catalogs, error) {
	fsys, err := fs.Sub(web.Catalogs, "static/i18n")
	if err != nil {
		return nil, fmt.Errorf("outage: %w", err)
	}
	cat, err := i18n.Load(fsys, "waiting")
	if err != nil {
		return nil, fmt.Errorf("outage: %w", err)
	}
	return cat, nil
}

func build() (*pages, error) {
	cat, err := messages()
	if err != nil {
		return nil, err
	}
	t, err := template.New("page.html").Option("missingkey=error").Parse(pageHTML)
	if err != nil {
		return nil, fmt.Errorf("outage: %w", err)
	}
	p := &pages{
		csp: "default-src 'none'; style-src " + hash(pageCSS) + "; script-src " + hash(pageJS) +
			"; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
		rendered: map[pageKey][]byte{},
	}
	for _, lang := range i18n.Langs {
		for v := range visitors {
			for first := FirstWait; first <= FirstWait+FirstSpread; first++ {
				d := data{
					Lang: lang, Title: cat.Text(lang, "unavailableTitle", nil), Body: cat.Text(lang, bodyKey[v], nil),
					RetryIn: cat.Plain(lang)["unavailableRetryIn"], Retrying: cat.Text(lang, "unavailableRetrying", nil),
					RetryInFirst: cat.Text(lang, "unavailableRetryIn", map[string]any{"s": first}),
					RetryNow:     cat.Text(lang, "unavailableRetryNow", nil),
					First:        first, Start: BackoffStart, Cap: BackoffCap,
					CSS: template.CSS(pageCSS), JS: template.JS(pageJS),
				}
				var b bytes.Buffer
				if err := t.Execute(&b, d); err != nil {
					return nil, fmt.Errorf("outage: %s: %w", lang, err)
				}
				p.rendered[pageKey{lang, v, first}] = b.Bytes()
			}
		}
	}
	return p, nil
}

// hash is the CSP source that allows one inline block with exactly this
// content.
func hash(content string) string {
	sum := sha256.Sum256([]byte(content))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}
