// Package publicapi is the public face of waitroom: the queue API (enter,
// status, leave, done, a queue's info, its line, the proof of work, the
// hand-over of a place), the checks of entry passes, the waiting page and
// its assets, the API's contract and the health checks.
//
// Its handlers are exported for internal/web/httpapi, whose routes.go
// mounts them with the admin API's. public.go is the queue API (enter,
// whose caller internal/web/admission resolves; status, leave, done,
// info), ticket.go the tickets it answers, trust.go the place credentials
// and pass checks, challenge.go the proof of work, handoff.go the
// hand-over, pages.go and assets.go the pages, health.go the health
// checks. Errors are answered by internal/web/httpkit.
package publicapi

import (
	"crypto/rand"
	"io/fs"
	"net/http"

	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/gate/command"
	"github.com/waitroom/waitroom/internal/hygiene/clientip"
	"github.com/waitroom/waitroom/internal/hygiene/crossorigin"
	"github.com/waitroom/waitroom/internal/hygiene/netclass"
	"github.com/waitroom/waitroom/internal/ops/paid"
	"github.com/waitroom/waitroom/internal/trust/challenge"
	"github.com/waitroom/waitroom/internal/trust/handoff"
	"github.com/waitroom/waitroom/internal/trust/humancheck"
	"github.com/waitroom/waitroom/internal/trust/invite"
	"github.com/waitroom/waitroom/internal/trust/pass"
	"github.com/waitroom/waitroom/internal/trust/place"
	"github.com/waitroom/waitroom/internal/web/admission"
	"github.com/waitroom/waitroom/internal/web/httpkit"
	"github.com/waitroom/waitroom/internal/web/linedoc"
	"github.com/waitroom/waitroom/internal/web/pages"
)

// Options are what the public API needs; Store, Places, Passes, Gate,
// Responder and Static are required.
type Options struct {
	Store *queue.Store
	// Commands carries out the order page's commands (done, extend).
	// Required.
	Commands *command.Runner
	// Responder answers errors and logs (shared with the admin API).
	Responder *httpkit.Responder
	// Places issues and verifies place credentials.
	Places *place.Credentials
	// Passes issues and checks entry passes and publishes their keys.
	Passes *pass.Passes
	// Join verifies sites' join tokens; nil refuses them.
	Join *place.Join
	// CookieSecure marks the place cookie Secure; off only for local
	// development over plain http.
	CookieSecure bool
	// InsecureUserIDs accepts plain user ids ({"user_id"}, ?user_id=,
	// DELETE .../users/{id}): whoever names an id owns its place. For load
	// tests only.
	InsecureUserIDs bool
	// TargetURL is where admitted users go (the order page); it gets the
	// entry pass as the query parameter wr_pass.
	TargetURL string
	// Static holds the pages and their assets (web/static).
	Static fs.FS
	// Pages renders the waiting page and serves the operator's files
	// under /_waitroom/site/; nil: the project's template alone.
	Pages *pages.Pages
	// Gate names the page of a queue's room an admitted user continues to
	// in gate mode (gate.Gate.Entrance).
	Gate *gate.Gate
	// Proxying: gate mode, an upstream behind waitroom.
	Proxying bool
	// ClientIP finds a request's client address for per-client limits;
	// nil: the peer's address (no trusted proxies).
	ClientIP *clientip.Resolver
	// Challenges issues and checks the proof of work a queue may ask for
	// before entering; nil: a key of this process's own (one replica).
	Challenges *challenge.Challenges
	// Origins are the other sites allowed to call the public API (CORS);
	// nil: none.
	Origins *crossorigin.Policy
	// Paid records what visitors paid; nil: nothing recorded.
	Paid PaidRecorder
	// Handoffs moves places to other devices; nil: not offered.
	Handoffs *handoff.Service
	// Human checks a human check's token with its provider (nil: no
	// human check). The waiting page's Content-Security-Policy allows
	// its widget's script and frame.
	Human *humancheck.Checker
	// Networks is the operator's table of network classes; nil: every
	// network of the default class.
	Networks *netclass.Watcher
	// Codes digests the invitation codes enters bring, and Guard locks
	// out those who guess them; nil Codes: every code is refused.
	Codes *invite.Codes
	Guard *invite.Guard
}

// PaidRecorder records what visitors paid: *paid.Recorder. The enter and
// challenge handlers call it once per event.
type PaidRecorder interface {
	Record(queue string, e paid.Event)
}

// API serves the public API and pages. Its handlers are mounted by
// internal/web/httpapi's routes.
type API struct {
	store        *queue.Store
	kit          *httpkit.Responder
	admission    *admission.Admission // enter's one way in (public.go)
	networks     *netclass.Watcher
	places       *place.Credentials
	passes       *pass.Passes
	cookieSecure bool
	// placeCookiePrefix and placeCookieAttrs come before the queue's name
	// and after the value in the place cookie's line.
	placeCookiePrefix, placeCookieAttrs string
	insecureIDs                         bool
	targetURL                           string
	static                              fs.FS
	pages                               *pages.Pages
	assetTags                           assetTags // the ETag of each file of static
	gate                                *gate.Gate
	proxying                            bool // gate mode
	clientIP                            *clientip.Resolver
	challenges                          *challenge.Challenges
	origins                             *crossorigin.Policy
	paid                                PaidRecorder       // never nil
	handoffs                            *handoff.Service   // nil: none
	lines                               *linedoc.Documents // the queues' public line documents (line.go)
	waitingCSP                          []string           // the waiting page's CSP with a human check (humancheck.go); nil: the common one
	commands                            *command.Runner    // the order page's commands (commands.go)
}

// New returns the public API of o.
func New(o Options) *API {
	s := &API{
		store:             o.Store,
		kit:               o.Responder,
		networks:          o.Networks,
		places:            o.Places,
		passes:            o.Passes,
		cookieSecure:      o.CookieSecure,
		placeCookieAttrs:  placeCookieAttrs(o.CookieSecure),
		placeCookiePrefix: place.CookiePrefix(o.CookieSecure),
		insecureIDs:       o.InsecureUserIDs,
		targetURL:         o.TargetURL,
		static:            o.Static,
		pages:             o.Pages,
		assetTags:         newAssetTags(o.Static),
		gate:              o.Gate,
		proxying:          o.Proxying,
		clientIP:          o.ClientIP,
		challenges:        o.Challenges,
		origins:           o.Origins,
		paid:              o.Paid,
		handoffs:          o.Handoffs,
		lines:             linedoc.New(o.Store),
		commands:          o.Commands,
	}
	if s.pages == nil {
		s.pages = pages.Default()
	}
	if s.clientIP == nil {
		s.clientIP, _ = clientip.New(nil) // trusts nobody: cannot fail
	}
	if s.challenges == nil {
		key := make([]byte, 32)
		_, _ = rand.Read(key) // never fails (crypto/rand)
		s.challenges, _ = challenge.New(key)
	}
	if s.origins == nil {
		s.origins, _ = crossorigin.New(nil) // no origins: cannot fail
	}
	if s.paid == nil {
		s.paid = (*paid.Recorder)(nil) // records nothing
	}
	if o.Human != nil {
		s.waitingCSP = waitingPageCSP(o.Human.Public())
	}
	s.admission = newAdmission(o, s)
	return s
}

// Origins is the policy of other sites' calls, whose CORS middleware the
// routes use.
func (s *API) Origins() *crossorigin.Policy { return s.origins }

// newAdmission is the enter of o's parts, with s's stand-ins for those o
// leaves out (challenges, paid). An interface holding a nil pointer is not
// nil: a part o leaves out stays out.
func newAdmission(o Options, s *API) *admission.Admission {
	a := admission.Options{Store: o.Store, Places: o.Places, Challenges: s.challenges, Join: o.Join,
		Paid: s.paid, Networks: o.Networks, InsecureUserIDs: o.InsecureUserIDs, Codes: o.Codes, Guard: o.Guard}
	if o.Handoffs != nil {
		a.Handoffs = o.Handoffs
	}
	if o.Human != nil {
		a.Human = o.Human
	}
	return admission.New(a)
}

// fail answers err (httpkit.Responder.Fail).
func (s *API) fail(w http.ResponseWriter, r *http.Request, err error) { s.kit.Fail(w, r, err) }

// clientKey names r's client in the rate limits: its address, or its /64
// for IPv6 (clientip.Key), so one host cannot spread its calls over its
// block's addresses to get a budget per address.
func (s *API) clientKey(r *http.Request) string {
	return clientip.Key(s.clientIP.Addr(r))
}

// client names r's client in the enter limits and the price of a place
// (admission.Client).
func (s *API) client(r *http.Request) queue.Caller {
	return s.admission.Client(s.clientIP.Addr(r))
}
