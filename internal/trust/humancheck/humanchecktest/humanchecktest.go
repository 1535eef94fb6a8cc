// Package humanchecktest is a stand-in for a human check's provider, for
// tests and the lab: a siteverify in the providers' shared shape and a
// widget script that mimics their JavaScript API (turnstile.render,
// hcaptcha.render, grecaptcha.render). The widget draws a real button, "I
// am human"; a click fetches a token from the stand-in, which its
// siteverify then accepts once, for the host of the page it was solved on.
//
// Modes make the siteverify refuse, hang, fail with 500 or answer
// nonsense, so that a Checker's every answer can be met for real.
package humanchecktest

import (
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/trust/humancheck"
)

// The stand-in's credentials.
const (
	SiteKey = "standin-sitekey"
	Secret  = "standin-secret-3f9c1b7e"
)

// DefaultHostname is the hostname a token is solved on when neither
// SetHostname nor the widget's page (its Origin) says one.
const DefaultHostname = "localhost"

// Mode is how the siteverify answers.
type Mode int

const (
	Accept  Mode = iota // judge: an issued, unused token passes
	Refuse              // say no to every token (error-codes invalid-input-response)
	Hang                // answer nothing until the caller gives up (or Close)
	Fail                // 500
	Garbage             // 200 with a body that is not siteverify's JSON
)

//go:embed widget.js
var widgetJS []byte

// Server is a running stand-in.
type Server struct {
	URL       string // http://127.0.0.1:port
	VerifyURL string // URL + "/siteverify"
	ScriptURL string // URL + "/widget.js"

	srv     *http.Server
	ln      net.Listener
	release chan struct{} // closed by Close: lets hanging answers go
	closed  sync.Once

	calls  atomic.Int64 // siteverify calls
	issued atomic.Int64

	mu       sync.Mutex
	mode     Mode
	hostname string            // "" : the page's, from the widget's request
	tokens   map[string]string // issued, unused token -> its hostname
}

// NewServer starts a stand-in on a free loopback port, closed when the
// test ends.
func NewServer(t testing.TB) *Server {
	t.Helper()
	s, err := Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// Start starts a stand-in listening on addr ("127.0.0.1:0": a free
// port), for the lab; Close stops it.
func Start(addr string) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{
		ln:      ln,
		release: make(chan struct{}),
		tokens:  map[string]string{},
	}
	s.URL = "http://" + ln.Addr().String()
	s.VerifyURL = s.URL + "/siteverify"
	s.ScriptURL = s.URL + "/widget.js"
	mux := http.NewServeMux()
	mux.HandleFunc("POST /siteverify", s.siteverify)
	mux.HandleFunc("GET /widget.js", s.widget)
	mux.HandleFunc("/issue", s.issue)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Close stops the stand-in, letting go of any answer it holds (Hang).
func (s *Server) Close() {
	s.closed.Do(func() {
		close(s.release)
		_ = s.srv.Close()
	})
}

// Options are a Checker's options for this stand-in, as provider p, for
// a room serving hosts.
func (s *Server) Options(p humancheck.Provider, hosts ...string) humancheck.Options {
	return humancheck.Options{
		Provider: p, SiteKey: SiteKey, Secret: Secret,
		VerifyURL: s.VerifyURL, ScriptURL: s.ScriptURL, Hosts: hosts,
	}
}

// SetMode changes how siteverify answers from now on.
func (s *Server) SetMode(m Mode) {
	s.mu.Lock()
	s.mode = m
	s.mu.Unlock()
}

// SetHostname makes every token issued from now on solved on host (""
// again: the widget's page's, or DefaultHostname).
func (s *Server) SetHostname(host string) {
	s.mu.Lock()
	s.hostname = host
	s.mu.Unlock()
}

// Calls is how many siteverify calls the stand-in received.
func (s *Server) Calls() int { return int(s.calls.Load()) }

// Issued is how many tokens it issued (Issue and the widget's clicks).
func (s *Server) Issued() int { return int(s.issued.Load()) }

// Issue returns a token its siteverify accepts once, as solved on the
// SetHostname host (or DefaultHostname).
func (s *Server) Issue() string { return s.mint("") }

func (s *Server) mint(pageHost string) string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	tok := "standin." + hex.EncodeToString(b)
	s.mu.Lock()
	host := s.hostname
	if host == "" {
		host = pageHost
	}
	if host == "" {
		host = DefaultHostname
	}
	s.tokens[tok] = host
	s.mu.Unlock()
	s.issued.Add(1)
	return tok
}

// issue answers the widget's click with a token, as text. Any page may
// ask (CORS *), as a provider's widget works on any page of its site.
func (s *Server) issue(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	if r.Method == http.MethodOptions {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if r.Method != http.MethodPost {
		http.Error(w, "POST", http.StatusMethodNotAllowed)
		return
	}
	host := ""
	if u, err := url.Parse(r.Header.Get("Origin")); err == nil {
		host = u.Hostname()
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write([]byte(s.mint(host)))
}

func (s *Server) widget(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(widgetJS)
}

// siteverify answers in the providers' shared shape.
func (s *Server) siteverify(w http.ResponseWriter, r *http.Request) {
	s.calls.Add(1)
	s.mu.Lock()
	mode := s.mode
	s.mu.Unlock()
	switch mode {
	case Hang:
		select {
		case <-r.Context().Done():
		case <-s.release:
		}
		return
	case Fail:
		http.Error(w, "stand-in failure", http.StatusInternalServerError)
		return
	case Garbage:
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"succ`))
		return
	}
	if err := r.ParseForm(); err != nil {
		answer(w, false, "", "bad-request")
		return
	}
	if r.PostForm.Get("secret") != Secret {
		answer(w, false, "", "invalid-input-secret")
		return
	}
	tok := r.PostForm.Get("response")
	if tok == "" {
		answer(w, false, "", "missing-input-response")
		return
	}
	if mode == Refuse {
		answer(w, false, "", "invalid-input-response")
		return
	}
	s.mu.Lock()
	host, ok := s.tokens[tok]
	delete(s.tokens, tok) // good once, as at the providers
	s.mu.Unlock()
	if !ok {
		answer(w, false, "", "invalid-input-response")
		return
	}
	answer(w, true, host)
}

func answer(w http.ResponseWriter, success bool, host string, codes ...string) {
	w.Header().Set("Content-Type", "application/json")
	if codes == nil {
		codes = []string{}
	}
	_ = json.NewEncoder(w).Encode(map[string]any{
		"success":      success,
		"hostname":     host,
		"challenge_ts": time.Now().UTC().Format(time.RFC3339),
		"action":       "",
		"error-codes":  codes,
	})
}
