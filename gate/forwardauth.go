package gate

import (
	"net/http"
	"net/textproto"
	"net/url"
	"strings"

	"github.com/waitroom/waitroom/internal/hygiene/reqcheck"
)

// Forward auth: the door a proxy in front of the order page asks
// (nginx auth_request), and the answer to what it refused.

// Headers that name the holder of a valid pass: ForwardAuth answers with
// them, and waitroom's reverse-proxy gate sets them on the requests it
// forwards (removing any a client sent).
const (
	HeaderSub   = "X-Waitroom-Sub"
	HeaderQueue = "X-Waitroom-Queue"
	// HeaderPass carries the pass that was checked, exactly: the one an
	// order page forwards to waitroom's done endpoint. The reverse-proxy
	// gate sets it in place of the pass cookie and bearer token, which it
	// does not forward; a gate behind it reads it like a bearer token (it
	// is verified the same way, so a client gains nothing by sending one).
	HeaderPass = "X-Waitroom-Pass"
)

// HeaderCommand is the response header in which the order page speaks
// back to waitroom about the request's admission: CommandDone or
// CommandExtend. The gate acts on it (Options.CommandURL; waitroom's
// reverse-proxy gate itself) and always removes it before the client
// sees it; a command in the answer to a request without a valid pass
// does nothing. Only a header acts: the same field sent as a trailer, or
// in an informational (1xx) answer, is removed and ignored.
const HeaderCommand = "Waitroom-Command"

// The commands of HeaderCommand.
const (
	// CommandDone ends the admission now: its pass stops opening the
	// gate and the slot goes to the next person.
	CommandDone = "done"
	// CommandExtend renews the admission as a sliding session's check
	// does: it ends the queue's session TTL from now, never beyond its
	// maximum (WAITROOM_SESSION_MAX); without sliding sessions it does
	// nothing.
	CommandExtend = "extend"
)

// TakeCommand removes HeaderCommand from an answer's headers h, in every
// line and in any spelling of its name (a handler may write the map
// directly), and returns the command it carried; present is false when
// there was none. The command is its one line's value without the spaces
// and tabs around it, as it travels on the wire, and otherwise exactly as
// sent: "Done" or "done, extend" names no command. Two lines are no
// command ("").
func TakeCommand(h http.Header) (cmd string, present bool) {
	vs, ok := h[HeaderCommand]
	if ok {
		delete(h, HeaderCommand)
	}
	for k, more := range h { // rare: the name in another spelling
		if len(k) == len(HeaderCommand) && strings.EqualFold(k, HeaderCommand) {
			vs, ok = append(vs, more...), true
			delete(h, k)
		}
	}
	return commandOf(vs, ok)
}

// commandOf is the command of a field's lines vs (present: it was there).
func commandOf(vs []string, present bool) (string, bool) {
	if !present || len(vs) != 1 {
		return "", present
	}
	return textproto.TrimString(vs[0]), true
}

// takeFields removes HeaderCommand from h in every spelling of its name,
// as a header and where net/http reads a trailer undeclared before the
// headers (under http.TrailerPrefix), in one pass over h; it returns the
// lines of each. A declared trailer's value is set under its own name
// once the headers are out: a later call finds it as a header.
func takeFields(h http.Header) (header, trailer []string, inHeader, inTrailer bool) {
	for k, vs := range h {
		switch {
		case len(k) == len(HeaderCommand) && (k == HeaderCommand || strings.EqualFold(k, HeaderCommand)):
			header, inHeader = append(header, vs...), true
		case len(k) == len(http.TrailerPrefix)+len(HeaderCommand) && strings.EqualFold(k, http.TrailerPrefix+HeaderCommand):
			trailer, inTrailer = append(trailer, vs...), true
		default:
			continue
		}
		delete(h, k)
	}
	if announced, ok := h["Trailer"]; ok {
		dropAnnounced(h, announced)
	}
	return header, trailer, inHeader, inTrailer
}

// dropAnnounced rewrites the trailers h announces without HeaderCommand,
// so none goes out after the body.
func dropAnnounced(h http.Header, announced []string) {
	var kept []string
	found := false
	for _, line := range announced {
		for name := range strings.SplitSeq(line, ",") {
			name = textproto.TrimString(name)
			switch {
			case strings.EqualFold(name, HeaderCommand):
				found = true
			case name != "":
				kept = append(kept, name)
			}
		}
	}
	switch {
	case !found:
	case len(kept) == 0:
		delete(h, "Trailer")
	default:
		h["Trailer"] = []string{strings.Join(kept, ", ")}
	}
}

// HeaderOriginalURI names the header in which a proxy doing forward auth
// passes the request line's target to ForwardAuth and Refused (nginx:
// $request_uri).
const HeaderOriginalURI = "X-Original-URI"

// ForwardAuth answers a proxy's authorisation subrequest (nginx
// auth_request, Traefik forwardAuth, Envoy ext_authz over HTTP): 204 with
// HeaderSub and HeaderQueue when the request carries a valid pass (cookie
// or bearer) for its room, 204 without them when no route covers it or it
// is bypassed, 401 when not, 503 when it cannot tell (Options.Fail;
// FailOpen: 204 without them). The proxy sends refused users to the
// waiting page itself (see deploy/nginx), through Refused.
//
// The room comes from the Host header (the proxy sets the request's) and
// the path in HeaderOriginalURI. The proxy forwards the path as the client
// sent it, so it must already be in its clean form: a path with dot
// segments, duplicate slashes or an ambiguous encoding is refused (401
// here, 400 invalid_path from Refused), never judged on a cleaned copy the
// upstream would not see. Without the header no path is bypassed and the
// room is the catch-all (Options.Queue); with none, the request is refused.
func (g *Gate) ForwardAuth(w http.ResponseWriter, r *http.Request) {
	rm, ok := g.forwardedRoom(r)
	if !ok {
		writeError(w, http.StatusUnauthorized, "invalid_path", "the path (X-Original-URI) is ambiguous, or missing", "")
		return
	}
	if rm == nil {
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusNoContent)
		return
	}
	c, _, v := g.judge(r, rm)
	switch v {
	case admitted:
		h := w.Header()
		h.Set(HeaderSub, c.Subject)
		h.Set(HeaderQueue, c.Queue)
		h.Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusNoContent)
	case openedUnchecked: // FailOpen: through, naming nobody
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusNoContent)
	case unknown:
		// nginx turns any answer but 2xx, 401 and 403 into a 500, which
		// the shipped config sends to Refused: the unavailable page.
		writeError(w, http.StatusServiceUnavailable, "unavailable", "the waiting room cannot check passes right now", "")
	default: // Refused answers it
		writeError(w, http.StatusUnauthorized, "pass_required", "a valid entry pass is required", "")
	}
}

// forwardedRoom is the room of the request a proxy asks about, nil when it
// passes without a pass (no route covers it, or it is bypassed); false
// when its path (HeaderOriginalURI) is not clean, or missing where no
// catch-all room can stand in for it.
func (g *Gate) forwardedRoom(r *http.Request) (*room, bool) {
	p, ok := forwardedPath(r)
	if ok && !reqcheck.IsCanonical(p) {
		return nil, false
	}
	if g.bypassClient != nil && g.bypassClient(r) {
		return nil, true
	}
	if !ok {
		rm, _ := g.table.match("", "/") // the catch-all, when there is one
		if rm == nil || rm.queue != g.queue {
			return nil, false
		}
		return rm, true
	}
	if g.bypassedPath(p) {
		return nil, true
	}
	// Routes compare the decoded path, as the upstream will read it: an
	// escaped letter ("/s%61le/") is still under "/sale/".
	clean, _ := reqcheck.CleanPath(p) // canonical: cannot fail, and resolves nothing
	return g.roomOf(r, clean)
}

// forwardedPath is the escaped path of the request a proxy asks about:
// its request target's, also when that is in absolute form.
func forwardedPath(r *http.Request) (string, bool) {
	orig := r.Header.Get(HeaderOriginalURI)
	if orig == "" {
		return "", false
	}
	if !strings.HasPrefix(orig, "/") {
		u, err := url.ParseRequestURI(orig)
		if err != nil {
			return "", true // refused as ambiguous
		}
		return u.EscapedPath(), true
	}
	p, _, _ := strings.Cut(orig, "?")
	return p, true
}

// Refused answers, on a proxy's behalf, a request it refused after
// ForwardAuth (nginx: error_page 401 to a location that proxies here):
// exactly as the gate itself would, a 303 to the waiting page with the
// original path as ?return= for browsers, 401 JSON for API clients, 400
// invalid_path for a path that is not clean. The proxy passes the original
// request line in HeaderOriginalURI; it only ever becomes a same-site
// return path.
func (g *Gate) Refused(w http.ResponseWriter, r *http.Request) {
	rm, ok := g.forwardedRoom(r)
	if !ok {
		invalidPath(w)
		return
	}
	orig := r.Clone(r.Context())
	orig.URL = &url.URL{Path: "/"}
	if u, err := url.ParseRequestURI(r.Header.Get(HeaderOriginalURI)); err == nil && reqcheck.SameSitePath(u.RequestURI()) {
		q := u.Query()
		q.Del("wr_pass")
		u.RawQuery = q.Encode()
		orig.URL = u
	}
	v := admitted // no room: nothing to refuse
	if rm != nil {
		_, _, v = g.judge(r, rm)
	}
	if v == admitted || v == openedUnchecked {
		// Valid now (the proxy's view was older), or failing open: back
		// to where it was going.
		w.Header().Set("Cache-Control", "no-store")
		http.Redirect(w, r, orig.URL.RequestURI(), http.StatusSeeOther)
		return
	}
	g.refuse(w, orig, rm, v)
}
