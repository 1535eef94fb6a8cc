package gate_test

import (
	"context"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/hygiene/reqcheck/pathtest"
)

// The rooms of the tests below: a concert's sale inside the sale, and the
// shop's host as a whole; other hosts' paths outside /sale/ need no pass.
var (
	testRooms  = pathtest.TestRooms("concert-a", "sale", "default")
	testRoutes = pathtest.RoutesOf(testRooms)
)

func TestParseRoutes(t *testing.T) {
	routes, err := gate.ParseRoutes(" /sale/concert-a/=concert-a , ,/sale=sale,Shop.Example./=default")
	if err != nil {
		t.Fatal(err)
	}
	want := []gate.Route{
		{Prefix: "/sale/concert-a/", Queue: "concert-a"},
		{Prefix: "/sale", Queue: "sale"},
		{Host: "shop.example", Prefix: "/", Queue: "default"},
	}
	if !slices.Equal(routes, want) {
		t.Fatalf("ParseRoutes = %+v, want %+v", routes, want)
	}
	if got := routes[2].String(); got != "shop.example/" {
		t.Errorf("String() = %q", got)
	}
	if routes, err := gate.ParseRoutes(""); err != nil || len(routes) != 0 {
		t.Errorf("empty: %v %v", routes, err)
	}

	for entry, why := range map[string]string{
		"/sale/":                            "want [host]/path/prefix=queue",
		"sale=x":                            "clean path",
		"shop.example=x":                    "clean path",
		"/sale/../x/=q":                     "clean path",
		"/sale//x/=q":                       "clean path",
		"/s%61le/=q":                        "clean path",
		"/sale;v=1/=q":                      "clean path",
		"/sale?x/=q":                        "clean path",
		"/sale./=q":                         "ends with a dot",
		"/sale /=q":                         "ends with a dot",
		"/sale/=":                           "the queue",
		"/sale/=a/b":                        "the queue",
		"/sale/=" + strings.Repeat("q", 65): "the queue",
		"shop.example:8080/=q":              "without scheme or port",
		"https://shop.example/=q":           "without scheme or port",
		"shop_example/=q":                   "without scheme or port",
		".example/=q":                       "without scheme or port",
		"/sale/=a,/sale=b":                  "cover the same paths",
		"/SALE/=a,/sale/=b":                 "cover the same paths",
		"Shop.Example/=a,shop.example./=b":  "cover the same paths",
	} {
		_, err := gate.ParseRoutes(entry)
		if err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("ParseRoutes(%q) = %v, want an error saying %q", entry, err, why)
		}
	}
	// Every bad entry is reported, not only the first.
	if _, err := gate.ParseRoutes("/a/=x y,/b/=q,c=q"); err == nil || !strings.Contains(err.Error(), `"/a/=x y"`) || !strings.Contains(err.Error(), `"c=q"`) {
		t.Errorf("two bad entries: %v", err)
	}
}

// newRoutesGate is a gate over testRoutes (and catchAll, when set) that
// checks passes against w, with waiting pages /q/{queue} on this site.
func newRoutesGate(t *testing.T, w *waitroom, catchAll string, mod func(*gate.Options)) *gate.Gate {
	t.Helper()
	routes, err := gate.ParseRoutes(testRoutes)
	if err != nil {
		t.Fatal(err)
	}
	o := gate.Options{
		Queue:       catchAll,
		Routes:      routes,
		Issuer:      "https://waitroom.test",
		JWKSURL:     w.srv.URL + "/.well-known/jwks.json",
		WaitingPage: "/q/{queue}",
		Bypass:      []string{pathtest.Bypass},
	}
	if mod != nil {
		mod(&o)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	g, err := gate.New(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// withClaims names the pass's holder and queue in X-Waitroom-Sub and
// -Queue, as waitroom's own proxy does, for the recorder to see.
func withClaims(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del(gate.HeaderSub)
		r.Header.Del(gate.HeaderQueue)
		if c, ok := gate.FromContext(r.Context()); ok {
			r.Header.Set(gate.HeaderSub, c.Subject)
			r.Header.Set(gate.HeaderQueue, c.Queue)
		}
		next.ServeHTTP(w, r)
	})
}

// Which room a request is in, seen from outside: where a browser without
// a pass is sent ("" : let through).
func TestRoutesMatch(t *testing.T) {
	w := newWaitroom(t)
	h := newRoutesGate(t, w, "", nil).Handler(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {}))
	for _, c := range []struct{ host, path, room string }{
		{"other.example", "/sale/concert-a/seat/1", "concert-a"},
		{"other.example", "/sale/concert-a/", "concert-a"},
		{"other.example", "/sale/concert-a", "concert-a"}, // the prefix without its slash
		{"other.example", "/sale/concert-ab", "sale"},     // a segment boundary
		{"other.example", "/sale/Concert-A/x", "concert-a"},
		{"other.example", "/SALE/concert-a/x", "concert-a"},
		{"other.example", "/sale;jsessionid=1/concert-a/x", "concert-a"}, // Tomcat drops the parameters
		{"other.example", "/sale/concert-a./x", "!"},                     // Windows drops the dot, others keep a page of the sale
		{"other.example", "/sale/concert-a%20/x", "!"},                   // the same
		{"other.example", "/sale/x/../concert-a/y", "concert-a"},         // decided on the clean path
		{"other.example", "/sale/c%6fncert-a/y", "concert-a"},
		{"other.example", "/sale", "sale"},
		{"other.example", "/sale/", "sale"},
		{"other.example", "/salex", ""},
		{"other.example", "/", ""},
		{"other.example", "/about", ""},
		{"shop.example", "/about", "default"},
		{"SHOP.example.:8443", "/about", "default"},
		{"shop.example..", "/", "default"},
		{"shop.example", "/sale/x", "default"}, // the host's route comes first
		{"www.shop.example", "/about", ""},
		{"shop.example", "/static/app.js", ""}, // bypassed
	} {
		r := httptest.NewRequest("GET", c.path, nil)
		r.Host = c.host
		rr := httptest.NewRecorder()
		h.ServeHTTP(rr, r)
		got := ""
		switch rr.Code {
		case http.StatusSeeOther:
			got, _, _ = strings.Cut(strings.TrimPrefix(rr.Header().Get("Location"), "/q/"), "?")
		case http.StatusBadRequest:
			got = "!" // in two rooms, depending on the server
		case http.StatusOK:
		default:
			t.Errorf("%s%s: %d", c.host, c.path, rr.Code)
			continue
		}
		if got != c.room {
			t.Errorf("%s%s: in room %q, want %q", c.host, c.path, got, c.room)
		}
	}
}

// A pass opens its own room's routes and no other's: not by cookie, not
// as a bearer token, not handed over.
func TestRoutesPassOpensOnlyItsRoom(t *testing.T) {
	w := newWaitroom(t)
	g := newRoutesGate(t, w, "", nil)
	h := g.Handler(withClaims(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.RawQuery, "wr_pass") {
			t.Errorf("the pass reached the handler in %q", r.URL.RawQuery)
		}
		_, _ = rw.Write([]byte(r.Header.Get(gate.HeaderQueue)))
	})))
	concert := w.issue(t, "concert-a", time.Now().Add(time.Hour))
	sale := w.issue(t, "sale", time.Now().Add(time.Hour))

	if r := get(h, "/sale/concert-a/seat", "Cookie", gate.CookieName("concert-a", true)+"="+concert); r.Code != 200 || r.Body.String() != "concert-a" {
		t.Fatalf("concert-a's pass in its room: %d %s", r.Code, r.Body)
	}
	for name, hdr := range map[string][]string{
		"its own cookie":         {"Cookie", gate.CookieName("concert-a", true) + "=" + concert},
		"the sale room's cookie": {"Cookie", gate.CookieName("sale", true) + "=" + concert},
		"bearer":                 {"Authorization", "Bearer " + concert},
	} {
		if r := get(h, "/sale/other", hdr...); r.Code != http.StatusUnauthorized && r.Code != http.StatusSeeOther {
			t.Errorf("concert-a's pass (%s) on /sale/other: %d %s", name, r.Code, r.Body)
		}
	}
	// The sale room's pass does not open the concert inside it.
	if r := get(h, "/sale/concert-a/seat", "Cookie", gate.CookieName("sale", true)+"="+sale); r.Code != http.StatusSeeOther || r.Header().Get("Location") != "/q/concert-a?return=%2Fsale%2Fconcert-a%2Fseat" {
		t.Errorf("sale's pass in concert-a's room: %d %q", r.Code, r.Header().Get("Location"))
	}
	if r := get(h, "/sale/other", "Cookie", gate.CookieName("sale", true)+"="+sale); r.Code != 200 || r.Body.String() != "sale" {
		t.Errorf("sale's pass in its room: %d %s", r.Code, r.Body)
	}

	// Handed over in its room: the cookie of its own queue.
	r := get(h, "/sale/concert-a/?x=1&wr_pass="+url.QueryEscape(concert))
	if r.Code != http.StatusSeeOther || r.Header().Get("Location") != "/sale/concert-a/?x=1" || !strings.HasPrefix(r.Header().Get("Set-Cookie"), gate.CookieName("concert-a", true)+"=") {
		t.Fatalf("pass-link exchange in its room: %d %v", r.Code, r.Header())
	}
	// Handed over in another room: refused like an invalid pass, no cookie,
	// and not spent.
	fresh := w.issue(t, "concert-a", time.Now().Add(time.Hour))
	r = get(h, "/sale/other?wr_pass="+url.QueryEscape(fresh))
	if r.Code != http.StatusSeeOther || r.Header().Get("Location") != "/q/sale?return=%2Fsale%2Fother" || r.Header().Get("Set-Cookie") != "" {
		t.Fatalf("pass-link exchange in another room: %d %v", r.Code, r.Header())
	}
	// On a path in no room: dropped, no cookie, the request goes on.
	r = get(h, "/about?wr_pass="+url.QueryEscape(fresh))
	if r.Code != 200 || r.Header().Get("Set-Cookie") != "" || r.Body.String() != "" {
		t.Fatalf("pass-link exchange in no room: %d %v %s", r.Code, r.Header(), r.Body)
	}
	if r := get(h, "/sale/concert-a/?wr_pass="+url.QueryEscape(fresh)); !strings.HasPrefix(r.Header().Get("Set-Cookie"), gate.CookieName("concert-a", true)+"=") {
		t.Fatalf("the link refused elsewhere was spent: %d %v", r.Code, r.Header())
	}
}

// Generated hosts, paths and passes through the middleware, and through
// forward auth as a proxy asks it (the path as sent in X-Original-URI, the
// request forwarded as sent): nothing reaches the handler in a room (in
// any server's reading of its host and path) without a pass for that
// room.
func TestRoutesProperty(t *testing.T) {
	w := newWaitroom(t)
	doors := map[string]func(g *gate.Gate, next http.Handler) http.Handler{
		"middleware": func(g *gate.Gate, next http.Handler) http.Handler { return g.Handler(withClaims(next)) },
		"forward auth": func(g *gate.Gate, next http.Handler) http.Handler {
			return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				sub := httptest.NewRequest("GET", "/gate/verify", nil)
				sub.Host = r.Host
				sub.Header = r.Header.Clone()
				sub.Header.Set(gate.HeaderOriginalURI, r.RequestURI)
				auth := httptest.NewRecorder()
				g.ForwardAuth(auth, sub)
				if auth.Code != http.StatusNoContent {
					rw.WriteHeader(auth.Code)
					return
				}
				// As nginx's auth_request_set and proxy_set_header do.
				r.Header.Set(gate.HeaderSub, auth.Header().Get(gate.HeaderSub))
				r.Header.Set(gate.HeaderQueue, auth.Header().Get(gate.HeaderQueue))
				next.ServeHTTP(rw, r)
			})
		},
	}
	for door, build := range doors {
		for _, catchAll := range []string{"", "default"} {
			t.Run(door+"/catch-all="+catchAll, func(t *testing.T) {
				rooms := testRooms
				if catchAll != "" {
					rooms = append(slices.Clone(rooms), pathtest.Room{Prefix: "/", Queue: catchAll})
				}
				rec := &pathtest.Recorder{}
				srv := httptest.NewServer(build(newRoutesGate(t, w, catchAll, nil), rec))
				t.Cleanup(srv.Close)
				rng := rand.New(rand.NewPCG(21, 34))
				passes := map[string]string{}
				for _, q := range []string{"concert-a", "sale", "default"} {
					passes[q] = w.issue(t, q, time.Now().Add(time.Hour))
				}
				pathtest.SendToRooms(t, rng, strings.TrimPrefix(srv.URL, "http://"), passes, func(q string) string { return gate.CookieName(q, true) }, 3000)
				passless := rec.CheckRooms(t, rooms)
				seen := rec.Seen()
				byQueue := map[string]int{}
				for _, s := range seen {
					byQueue[s.Queue]++
				}
				t.Logf("%d reached the handler, %d without a pass; by pass: %v", len(seen), passless, byQueue)
				if passless == 0 || byQueue["concert-a"] == 0 || byQueue["sale"] == 0 || byQueue["default"] == 0 {
					t.Fatalf("the run proves nothing: %v", byQueue)
				}
			})
		}
	}
}

// Forward auth routes on the Host and X-Original-URI, reading the path
// decoded as the site will.
func TestRoutesForwardAuth(t *testing.T) {
	w := newWaitroom(t)
	g := newRoutesGate(t, w, "", nil)
	concert := w.issue(t, "concert-a", time.Now().Add(time.Hour))
	ask := func(handler http.HandlerFunc, host, uri string, header ...string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", "/gate/verify", nil)
		r.Host = host
		if uri != "" {
			r.Header.Set(gate.HeaderOriginalURI, uri)
		}
		for i := 0; i+1 < len(header); i += 2 {
			r.Header.Set(header[i], header[i+1])
		}
		rr := httptest.NewRecorder()
		handler(rr, r)
		return rr
	}
	cookie := []string{"Cookie", gate.CookieName("concert-a", true) + "=" + concert}
	for _, c := range []struct {
		host, uri string
		header    []string
		want      int
		queue     string
	}{
		{"other.example", "/sale/concert-a/x?y=1", cookie, 204, "concert-a"},
		{"other.example", "/sale/concert-a/x", nil, 401, ""},
		{"other.example", "/s%61le/concert-a/x", nil, 401, ""}, // decoded as the site reads it
		{"other.example", "/sale/other", cookie, 401, ""},
		{"shop.example", "/sale/concert-a/x", cookie, 401, ""}, // the host's own room
		{"other.example", "/about", nil, 204, ""},              // no room
		{"other.example", "", cookie, 401, ""},                 // no path, no catch-all
		{"other.example", "/sale/../about", nil, 401, ""},      // not clean
	} {
		rr := ask(g.ForwardAuth, c.host, c.uri, c.header...)
		if rr.Code != c.want || rr.Header().Get(gate.HeaderQueue) != c.queue {
			t.Errorf("verify %s %s: %d %q, want %d %q", c.host, c.uri, rr.Code, rr.Header().Get(gate.HeaderQueue), c.want, c.queue)
		}
	}
	// Refused sends to the waiting page of the path's room.
	rr := ask(g.Refused, "other.example", "/sale/concert-a/x", "Accept", "text/html")
	if rr.Code != http.StatusSeeOther || rr.Header().Get("Location") != "/q/concert-a?return=%2Fsale%2Fconcert-a%2Fx" {
		t.Errorf("refused: %d %q", rr.Code, rr.Header().Get("Location"))
	}
	rr = ask(g.Refused, "shop.example", "/sale/concert-a/x", "Accept", "text/html")
	if rr.Code != http.StatusSeeOther || rr.Header().Get("Location") != "/q/default?return=%2Fsale%2Fconcert-a%2Fx" {
		t.Errorf("refused on shop.example: %d %q", rr.Code, rr.Header().Get("Location"))
	}
}

// BypassClient lets its clients through without a pass, everywhere; the
// rest still need one.
func TestBypassClient(t *testing.T) {
	w := newWaitroom(t)
	office := netip.MustParsePrefix("192.0.2.0/24")
	g := newRoutesGate(t, w, "default", func(o *gate.Options) {
		o.BypassClient = func(r *http.Request) bool {
			host, _, _ := net.SplitHostPort(r.RemoteAddr)
			a, err := netip.ParseAddr(host)
			return err == nil && office.Contains(a)
		}
	})
	h := g.Handler(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {}))
	for addr, want := range map[string]int{"192.0.2.7:1234": 200, "198.51.100.7:1234": 303} {
		r := httptest.NewRequest("GET", "/sale/concert-a/x", nil)
		r.RemoteAddr = addr
		rr := httptest.NewRecorder()
		h.ServeHTTP(rr, r)
		if rr.Code != want {
			t.Errorf("from %s: %d, want %d", addr, rr.Code, want)
		}
		r = httptest.NewRequest("GET", "/gate/verify", nil)
		r.RemoteAddr = addr
		r.Header.Set(gate.HeaderOriginalURI, "/sale/concert-a/x")
		rr = httptest.NewRecorder()
		g.ForwardAuth(rr, r)
		if (rr.Code == 204) != (want == 200) {
			t.Errorf("verify from %s: %d", addr, rr.Code)
		}
	}
}

func TestRoutesOptions(t *testing.T) {
	w := newWaitroom(t)
	routes, _ := gate.ParseRoutes(testRoutes)
	base := gate.Options{Routes: routes, Issuer: "https://waitroom.test", JWKSURL: w.srv.URL + "/.well-known/jwks.json"}
	for name, mod := range map[string]func(*gate.Options){
		"one waiting page for three rooms": func(o *gate.Options) { o.WaitingPage = "/q/default" },
		"a catch-all besides a route for /": func(o *gate.Options) {
			o.Queue = "other"
			o.Routes = append(slices.Clone(o.Routes), gate.Route{Prefix: "/", Queue: "x"})
		},
		"a bad route": func(o *gate.Options) { o.Routes = []gate.Route{{Prefix: "/a/../b", Queue: "x"}} },
	} {
		o := base
		mod(&o)
		if _, err := gate.New(context.Background(), o); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	g := newRoutesGate(t, w, "default", nil)
	var got []string
	for _, r := range g.Routes() {
		got = append(got, r.String()+"="+r.Queue)
	}
	if want := []string{"shop.example/=default", "/sale/concert-a/=concert-a", "/sale/=sale", "/=default"}; !slices.Equal(got, want) {
		t.Errorf("Routes() = %q, want %q", got, want)
	}
	for _, c := range []struct{ host, queue, path string }{
		{"other.example", "concert-a", "/sale/concert-a/"},
		{"other.example", "default", "/"},
		{"shop.example", "default", "/"},
		{"shop.example", "sale", ""}, // shop.example's own room covers /sale/ there
	} {
		p, ok := g.Entrance(c.host, c.queue)
		if p != c.path || ok != (c.path != "") {
			t.Errorf("Entrance(%s, %s) = %q %v, want %q", c.host, c.queue, p, ok, c.path)
		}
	}
}
