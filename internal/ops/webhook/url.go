package webhook

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/waitroom/waitroom/internal/hygiene/safeurl"
)

// MaxURLBytes bounds a webhook URL (queue.MaxWebhookURLBytes too).
const MaxURLBytes = 2048

// CheckURL reports whether raw may be a webhook URL: absolute https with a
// host, no user info, no fragment, at most MaxURLBytes. Plain http is
// accepted for a loopback host (a receiver on the same machine, the tests)
// or, anywhere, only with insecureHTTP (WAITROOM_WEBHOOK_INSECURE_HTTP):
// events and their signatures would cross the network in clear.
//
// Where the URL points is the operator's choice (the env, or the admin API
// behind its token), but a webhook is a request waitroom makes on its
// behalf, so the client refuses what is never a site's receiver: the
// link-local ranges (cloud metadata at 169.254.169.254, fe80::/10) and the
// unspecified address, checked on the address actually dialled (after
// DNS), and it follows no redirect. Private ranges are allowed: receivers
// often live there.
func CheckURL(raw string, insecureHTTP bool) error {
	if len(raw) > MaxURLBytes {
		return fmt.Errorf("must be at most %d bytes", MaxURLBytes)
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		return errors.New("must be an absolute https URL")
	}
	if u.User != nil || u.Fragment != "" || strings.ContainsAny(raw, " \t\r\n") {
		return errors.New("must be an https URL without user info, fragment or spaces")
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if insecureHTTP || isLoopback(u.Hostname()) {
			return nil
		}
		return errors.New("must be https (plain http only to a loopback host, or with WAITROOM_WEBHOOK_INSECURE_HTTP=true)")
	}
	return errors.New("must be an absolute https URL")
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

// dialPolicy is what a delivery may reach (see CheckURL): receivers
// often live on the same machine or a private network, so only what is
// never a receiver is refused (safeurl.Policy).
var dialPolicy = safeurl.Policy{AllowLoopback: true, AllowPrivate: true}

// newClient is the delivery client: every request bounded by timeout,
// no redirects followed (a 3xx is a failed delivery), dials checked.
func newClient(timeout time.Duration) *http.Client {
	return safeurl.NewClient(timeout, dialPolicy, 4)
}
