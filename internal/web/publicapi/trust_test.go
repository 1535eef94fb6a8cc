package publicapi

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/waitroom/waitroom/internal/trust/place"
)

func TestSetPlaceCookieMatchesNetHTTP(t *testing.T) {
	for _, secure := range []bool{true, false} {
		s := &API{cookieSecure: secure, placeCookiePrefix: place.CookiePrefix(secure), placeCookieAttrs: placeCookieAttrs(secure)}
		mine, theirs := httptest.NewRecorder(), httptest.NewRecorder()
		s.setPlaceCookie(mine, "q_1-x", "v1.q_1-x.YTpB.bWFj")
		http.SetCookie(theirs, s.placeCookie("q_1-x", "v1.q_1-x.YTpB.bWFj", placeCookieAge))
		if a, b := mine.Header().Values("Set-Cookie"), theirs.Header().Values("Set-Cookie"); len(a) != 1 || len(b) != 1 || a[0] != b[0] {
			t.Errorf("secure=%v: wrote %q, net/http writes %q", secure, a, b)
		}
	}
}
