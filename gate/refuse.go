package gate

// What the gate answers a request it does not let through.

import (
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/waitroom/waitroom/internal/hygiene/reqcheck"
)

// refuse answers a request for room rm the gate does not let through (v):
// browsers navigating (GET or HEAD, not asking for JSON, no Authorization
// header) go to the room's waiting page, everything else gets 401 JSON
// naming it; 503 when the checker could not tell. A bad cookie is deleted.
// A pass refused as used elsewhere sends its holder to the waiting page
// with reason=used_elsewhere, which tells them why. While the room's sale
// is closed, those without a pass get its sold-out page (Options.SoldOut).
func (g *Gate) refuse(w http.ResponseWriter, r *http.Request, rm *room, v verdict) {
	if v == unknown {
		g.unavailable(w, r)
		return
	}
	if v == badCookie || v == duplicate {
		http.SetCookie(w, &http.Cookie{Name: rm.cookie, Path: "/", MaxAge: -1, HttpOnly: true, Secure: g.secure, SameSite: http.SameSiteLaxMode})
	}
	if v == duplicate {
		writeError(w, http.StatusUnauthorized, "invalid_pass", "the pass cookie came twice; neither is taken", "")
		return
	}
	if v == headerTwice {
		writeError(w, http.StatusUnauthorized, "invalid_pass", "the request's headers carry more than one pass; none is taken", "")
		return
	}
	if (v == noPass || v == badCookie) && g.soldOut(w, r, rm) {
		return // the sale is closed: no line to send anyone to
	}
	page := rm.waitingPage
	if page != "" && g.sameSite {
		q := url.Values{}
		if ret := r.URL.RequestURI(); reqcheck.SameSitePath(ret) {
			q.Set("return", ret)
		}
		if v == usedElsewhere {
			q.Set("reason", "used_elsewhere")
		}
		if len(q) > 0 {
			page += "?" + q.Encode()
		}
	}
	if page != "" && navigating(r) {
		w.Header().Set("Cache-Control", "no-store")
		http.Redirect(w, r, page, http.StatusSeeOther)
		return
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="waitroom", error="invalid_token"`)
	if v == usedElsewhere {
		writeError(w, http.StatusUnauthorized, "pass_used_elsewhere", "this entry pass was used from too many places and has been cancelled", page)
		return
	}
	writeError(w, http.StatusUnauthorized, "pass_required", "a valid entry pass is required: wait your turn in the waiting room", page)
}

// invalidPath answers 400 for a path servers could read more than one way.
func invalidPath(w http.ResponseWriter) {
	writeError(w, http.StatusBadRequest, "invalid_path", "the path is ambiguous (an encoded slash or dot, a backslash, a NUL or a dot segment with parameters)", "")
}

func writeError(w http.ResponseWriter, status int, code, message, waitingPage string) {
	var body struct {
		Error struct {
			Code        string `json:"code"`
			Message     string `json:"message"`
			WaitingPage string `json:"waiting_page,omitempty"`
		} `json:"error"`
	}
	body.Error.Code, body.Error.Message, body.Error.WaitingPage = code, message, waitingPage
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}
