package gate

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/waitroom/waitroom/internal/hygiene/reqcheck"
)

// Several rooms per site: which queue's pass a request needs, by its host
// and path.

// Route sends the requests for a host and path prefix to a queue's room:
// they need a pass for Queue, and a pass for Queue opens no other room's
// routes.
//
// A request takes the most specific route that covers it: a route naming
// its host before one for any host, then the longest prefix. A path no
// route covers needs no pass, unless Options.Queue names a room for every
// such path (the catch-all).
type Route struct {
	// Host is a host name of the site, matched without its port, any
	// trailing dot and case; "" covers every host.
	Host string
	// Prefix is a clean path starting with "/". It covers the path itself
	// with or without its trailing slash and every path below it, on a
	// segment boundary: "/sale/" (or "/sale") covers "/sale", "/sale/" and
	// "/sale/a", never "/salex". It is matched against the path the gate
	// decides on (reqcheck.CleanPath) with ASCII letters in either case, and
	// with each segment's ";parameters" and trailing dots and spaces
	// ignored, since some servers read "/SALE/", "/sale;x/" and "/sale./"
	// as "/sale/": a path under a room in any server's reading is in that
	// room. A path in one room read one way and in another read the other
	// ("/sale/concert-a;x/" under the routes "/sale/" and
	// "/sale/concert-a/") is refused: 400 invalid_path. So is a path with
	// non-ASCII letters that a server folding Unicode reads in another
	// room ("/ſale/", U+017F, or the full-width "/ｓａｌｅ/", are "/sale/"
	// to Java's and .NET's case-insensitive compares and to NFKC).
	Prefix string
	// Queue is the room: the queue whose pass opens these paths.
	Queue string
}

// String is the route as WAITROOM_GATE_ROUTES writes it, without its
// queue: "shop.example/sale/", "/sale/".
func (r Route) String() string { return r.Host + r.Prefix }

// ParseRoutes reads routes written as WAITROOM_GATE_ROUTES has them:
// comma-separated "[host]/path/prefix=queue" entries, for example
// "/sale/concert-a/=concert-a,/sale/=sale,shop.example/=default". Empty
// entries are skipped. Each entry is checked as New checks Options.Routes.
func ParseRoutes(s string) ([]Route, error) {
	var routes []Route
	var errs []error
	for entry := range strings.SplitSeq(s, ",") {
		if entry = strings.TrimSpace(entry); entry == "" {
			continue
		}
		where, queue, ok := cutLast(entry, "=")
		if !ok {
			errs = append(errs, fmt.Errorf("gate: route %q: want [host]/path/prefix=queue", entry))
			continue
		}
		host, prefix := where, ""
		if i := strings.IndexByte(where, '/'); i >= 0 {
			host, prefix = where[:i], where[i:]
		}
		routes = append(routes, Route{Host: strings.TrimSpace(host), Prefix: strings.TrimSpace(prefix), Queue: strings.TrimSpace(queue)})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	routes, err := checkRoutes(routes)
	if err != nil {
		return nil, err
	}
	return routes, nil
}

func cutLast(s, sep string) (before, after string, found bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

// checkRoutes returns routes with their hosts in canonical form (lower
// case, no trailing dot), or every reason some are not routes: a host that
// is not a plain host name (no port, no scheme), a prefix that is not a
// clean path, a queue whose name cannot be a pass cookie's, two routes for
// the same host and prefix.
func checkRoutes(routes []Route) ([]Route, error) {
	out := make([]Route, 0, len(routes))
	var errs []error
	seen := make(map[string]Route)
	for _, r := range routes {
		r.Host = strings.TrimRight(strings.ToLower(r.Host), ".")
		if err := checkRoute(r); err != nil {
			errs = append(errs, err)
			continue
		}
		k := r.Host + " " + prefixKey(r.Prefix)
		if prev, dup := seen[k]; dup {
			errs = append(errs, fmt.Errorf("gate: routes %q and %q cover the same paths", prev.String()+"="+prev.Queue, r.String()+"="+r.Queue))
			continue
		}
		seen[k] = r
		out = append(out, r)
	}
	return out, errors.Join(errs...)
}

func checkRoute(r Route) error {
	name := r.String() + "=" + r.Queue
	if !validQueueName(r.Queue) {
		return fmt.Errorf("gate: route %q: the queue must be 1 to 64 letters, digits, '-' or '_'", name)
	}
	if !validHost(r.Host) {
		return fmt.Errorf("gate: route %q: the host must be a host name (letters, digits, '-' and '.'), without scheme or port", name)
	}
	p := r.Prefix
	if !strings.HasPrefix(p, "/") || strings.ContainsAny(p, "%?#;") || !reqcheck.IsCanonical(p) {
		return fmt.Errorf("gate: route %q: the prefix must be a clean path starting with / (no dot segments, //, escapes, ';', '?' or '#')", name)
	}
	for seg := range strings.SplitSeq(p, "/") {
		if seg != strings.TrimRight(seg, ". ") {
			return fmt.Errorf("gate: route %q: a segment of the prefix ends with a dot or space, which some servers drop", name)
		}
	}
	return nil
}

// validQueueName: the names waitroom gives queues (queue.ValidateQueueName),
// which are also valid in a cookie's name.
func validQueueName(q string) bool {
	if q == "" || len(q) > 64 {
		return false
	}
	for i := 0; i < len(q); i++ {
		if c := q[i]; !isAlnum(c) && c != '-' && c != '_' {
			return false
		}
	}
	return true
}

func validHost(h string) bool {
	if h == "" {
		return true // any host
	}
	if len(h) > 253 || strings.HasPrefix(h, ".") || strings.Contains(h, "..") {
		return false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; !isAlnum(c) && c != '-' && c != '.' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// room is one queue's gate: the pass cookie it reads and the waiting page
// it sends refused browsers to.
type room struct {
	queue       string
	cookie      string
	waitingPage string // "" : refusals are 401s
}

// route is a Route as the table matches it.
type route struct {
	Route
	key  string // matchKey(Prefix), without its trailing slash: "" for "/"
	room *room
}

// routeTable finds the room of a request: the routes naming a host first,
// each group by longest prefix, so the first route that covers a request
// is the most specific.
type routeTable struct {
	routes []route
	hosts  bool // some route names a host: requests' hosts are read
}

// newRouteTable checks routes, adds catchAll (when set) as the route of
// every path of every host, and builds the rooms, whose waiting page is
// waitingPage with "{queue}" replaced.
func newRouteTable(routes []Route, catchAll, waitingPage string, secure bool) (*routeTable, error) {
	routes = slices.Clone(routes)
	if catchAll != "" && !slices.ContainsFunc(routes, func(r Route) bool {
		return r.Host == "" && prefixKey(r.Prefix) == "" && r.Queue == catchAll
	}) {
		routes = append(routes, Route{Prefix: "/", Queue: catchAll})
	}
	routes, err := checkRoutes(routes)
	if err != nil {
		return nil, err
	}
	rooms := make(map[string]*room)
	t := &routeTable{}
	for _, r := range routes {
		rm := rooms[r.Queue]
		if rm == nil {
			rm = &room{queue: r.Queue, cookie: CookieName(r.Queue, secure), waitingPage: strings.ReplaceAll(waitingPage, "{queue}", r.Queue)}
			rooms[r.Queue] = rm
		}
		t.routes = append(t.routes, route{Route: r, key: prefixKey(r.Prefix), room: rm})
		t.hosts = t.hosts || r.Host != ""
	}
	if len(rooms) > 1 && waitingPage != "" && !strings.Contains(waitingPage, "{queue}") {
		return nil, errors.New(`gate: with routes to more than one queue, WaitingPage must name the queue as "{queue}"`)
	}
	slices.SortStableFunc(t.routes, func(a, b route) int {
		if (a.Host == "") != (b.Host == "") {
			if a.Host != "" {
				return -1
			}
			return 1
		}
		return len(b.key) - len(a.key)
	})
	return t, nil
}

// match returns the room of a request for host (its Host header) and path
// (the clean path the gate decides on); nil: no route covers it. A path
// that servers read in two rooms (ok = false) is ambiguous: its room
// changes with whether a server drops ";parameters" and trailing dots
// ("/sale/concert-a;x/" is the concert's to Tomcat, a page of the sale to
// others), and neither pass may open it.
//
// A server that folds Unicode reads "/ſale/" (U+017F) or "/ｓａｌｅ/" as
// "/sale/" (reqcheck.FoldPath): a path whose folded reading is in another
// room than its bytes, or that folds into a path servers read more than
// one way, is ambiguous too.
func (t *routeTable) match(host, path string) (rm *room, ok bool) {
	if len(t.routes) == 0 {
		return nil, true
	}
	if t.hosts {
		host = canonicalHost(host)
	}
	if rm, ok = t.read(host, path); !ok {
		return nil, false
	}
	if folded, changed := reqcheck.FoldPath(path); changed && !t.foldsInto(host, path, folded, rm) {
		return nil, false
	}
	return rm, true
}

// read is the room of path on host (already canonical) as servers that
// fold ASCII alone read it; false when they read it in two rooms.
func (t *routeTable) read(host, path string) (*room, bool) {
	key := matchKey(path)
	rm := t.find(host, key)
	if key == path {
		return rm, true // nothing to read another way: the common case
	}
	if lower := lowerASCII(path); lower != key {
		if other := t.find(host, lower); other != nil && other != rm {
			return nil, false
		}
	}
	return rm, true
}

// foldsInto reports whether folded, path as a server that folds Unicode
// reads it, is in room rm too, and reads one way: folding that makes an
// escape, a query or a fragment ("％", "？", "＃"), or a path that is not
// clean ("／．．／" is "/../", which would take "/static/．．／order" out
// of a bypassed prefix), is refused whatever its room, since a server
// that folds before it resolves would serve another path.
func (t *routeTable) foldsInto(host, path, folded string, rm *room) bool {
	for _, c := range []string{"%", "?", "#"} {
		if strings.Count(folded, c) != strings.Count(path, c) {
			return false
		}
	}
	clean, err := reqcheck.CleanPath(folded)
	if err != nil || clean != folded {
		return false
	}
	other, ok := t.read(host, clean)
	return ok && other == rm
}

// find is the room of the most specific route for host covering key.
func (t *routeTable) find(host, key string) *room {
	for i := range t.routes {
		r := &t.routes[i]
		if r.Host != "" && r.Host != host {
			continue
		}
		if covers(r.key, key) {
			return r.room
		}
	}
	return nil
}

// covers reports whether the prefix key (without trailing slash) covers
// the path key: the same path, or one below it.
func covers(prefix, path string) bool {
	return strings.HasPrefix(path, prefix) && (len(path) == len(prefix) || path[len(prefix)] == '/')
}

// prefixKey is the form in which routes compare a prefix: its matchKey
// without the trailing slash ("" for "/").
func prefixKey(p string) string { return strings.TrimSuffix(matchKey(p), "/") }

// matchKey is the form in which routes compare paths: ASCII letters in
// lower case, each segment without ";parameters" and trailing dots and
// spaces (except the segments "." and "..", which a clean path does not
// have). A path that has none of these is its own key (no allocation).
func matchKey(p string) string {
	plain := true
	for i := 0; i < len(p) && plain; i++ {
		switch c := p[i]; {
		case 'A' <= c && c <= 'Z', c == ';':
			plain = false
		case (c == '.' || c == ' ') && (i+1 == len(p) || p[i+1] == '/'):
			plain = false
		}
	}
	if plain {
		return p
	}
	segs := strings.Split(p, "/")
	for i, s := range segs {
		s, _, _ = strings.Cut(s, ";")
		if s != "." && s != ".." {
			s = strings.TrimRight(s, ". ")
		}
		segs[i] = lowerASCII(s)
	}
	return strings.Join(segs, "/")
}

// lowerASCII is s with ASCII letters in lower case: s itself when it has
// none in upper case (no allocation).
func lowerASCII(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return 'A' <= r && r <= 'Z' }) {
		return s
	}
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// canonicalHost is a Host header as routes compare it: lower case, without
// port and trailing dots ("Shop.Example.:443" is "shop.example").
func canonicalHost(h string) string {
	if strings.HasPrefix(h, "[") { // an IPv6 literal: no route names one
		if i := strings.IndexByte(h, ']'); i >= 0 {
			return strings.ToLower(h[:i+1])
		}
		return strings.ToLower(h)
	}
	if i := strings.IndexByte(h, ':'); i >= 0 {
		h = h[:i]
	}
	return strings.ToLower(strings.TrimRight(h, "."))
}

// Routes returns the gate's routes, the most specific first, with the
// catch-all (Options.Queue) as the route "/" of every host.
func (g *Gate) Routes() []Route {
	out := make([]Route, len(g.table.routes))
	for i, r := range g.table.routes {
		out[i] = r.Route
	}
	return out
}

// Entrance returns the path on host where queue's room begins (its
// shortest route there), for a user admitted without a path to return to:
// false when no route of queue serves host.
func (g *Gate) Entrance(host, queue string) (string, bool) {
	best := ""
	found := false
	for _, r := range g.table.routes {
		if r.Queue != queue || (found && len(r.Prefix) >= len(best)) {
			continue
		}
		// A route of queue that a more specific one shadows on host is
		// no way in.
		if rm, _ := g.table.match(host, r.Prefix); rm != nil && rm.queue == queue {
			best, found = r.Prefix, true
		}
	}
	return best, found
}

// roomOf is the room of a request whose clean path is p; false when p is
// in two rooms, depending on the server (routeTable.match).
func (g *Gate) roomOf(r *http.Request, p string) (*room, bool) {
	return g.table.match(r.Host, p)
}
