package gate

import (
	"net/url"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/internal/hygiene/reqcheck"
	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

func TestMatchKey(t *testing.T) {
	for p, want := range map[string]string{
		"/sale/concert-a/x":   "/sale/concert-a/x",
		"/":                   "/",
		"/SALE/Concert-A/":    "/sale/concert-a/",
		"/sale;v=1/x;y":       "/sale/x",
		"/sale./x. /y":        "/sale/x/y",
		"/a.b/c":              "/a.b/c",
		"/공연/A":               "/공연/a",
		"/sale/concert-a ;x/": "/sale/concert-a/",
	} {
		if got := matchKey(p); got != want {
			t.Errorf("matchKey(%q) = %q, want %q", p, got, want)
		}
	}
}

func TestCanonicalHost(t *testing.T) {
	for h, want := range map[string]string{
		"shop.example":       "shop.example",
		"Shop.Example.:8443": "shop.example",
		"shop.example..":     "shop.example",
		"shop.example:80:80": "shop.example",
		"[2001:DB8::1]:443":  "[2001:db8::1]",
		"":                   "",
	} {
		if got := canonicalHost(h); got != want {
			t.Errorf("canonicalHost(%q) = %q, want %q", h, got, want)
		}
	}
}

// The common request (a plain path, a lower-case host) finds its room
// without allocating.
func TestMatchAllocatesNothing(t *testing.T) {
	routes, err := ParseRoutes("/sale/concert-a/=concert-a,/sale/=sale,shop.example/=default")
	if err != nil {
		t.Fatal(err)
	}
	table, err := newRouteTable(routes, "other", "/q/{queue}", true)
	if err != nil {
		t.Fatal(err)
	}
	var rm *room
	allocs := testing.AllocsPerRun(100, func() { rm, _ = table.match("www.example:443", "/sale/concert-a/seat/12") })
	if allocs != 0 || rm == nil || rm.queue != "concert-a" {
		t.Errorf("%v allocations, room %+v", allocs, rm)
	}
}

// A path whose room depends on whether a server drops ";parameters" and
// trailing dots is in neither; one in a room one way and in none the
// other is in that room.
func TestMatchAmbiguous(t *testing.T) {
	routes, err := ParseRoutes("/sale/concert-a/=concert-a,/sale/=sale")
	if err != nil {
		t.Fatal(err)
	}
	table, err := newRouteTable(routes, "", "/q/{queue}", true)
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{
		"/sale/concert-a;x/y":  "!",
		"/sale/concert-a./y":   "!",
		"/sale/concert-a /y":   "!",
		"/sale;x/concert-a/y":  "concert-a", // no room, or the concert's
		"/Sale/Concert-A/y":    "concert-a",
		"/sale/concert-ab;x/y": "sale",
		"/salex;y/":            "",
	} {
		rm, ok := table.match("", p)
		got := "!"
		if ok {
			got = ""
			if rm != nil {
				got = rm.queue
			}
		}
		if got != want {
			t.Errorf("match(%q) = %q, want %q", p, got, want)
		}
	}
}

// FuzzMatchUnicodeFolds checks match against an oracle of its own, the
// whole path normalised by golang.org/x/text (NFKC, then full case
// folding, then NFKC, as NFKC_Casefold does), not the gate's per-rune
// table: whenever match takes a path into a room and the oracle's reading
// is a clean path, that reading is in the same room.
func FuzzMatchUnicodeFolds(f *testing.F) {
	routes, err := ParseRoutes("/sale/concert-a/=concert-a,/sale/=sale,/k1/=k,/static/=s")
	if err != nil {
		f.Fatal(err)
	}
	table, err := newRouteTable(routes, "default", "/q/{queue}", true)
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{"/sale/item", "/\u017fale/item", "/ｓａｌｅ/concert-a/x", "/sale/concert\uff0da/x", "/\u212a1/x",
		"/static/\uff0e\uff0e\uff0forder", "/stra\u00dfe", "/sale/\u017fhoes", "/\U0001d42cale/", "/k\u2081/", "/café"} {
		f.Add(seed)
	}
	fold := cases.Fold()
	f.Fuzz(func(t *testing.T, p string) {
		clean, err := reqcheck.CleanPath((&url.URL{Path: p}).EscapedPath())
		if err != nil || !strings.HasPrefix(p, "/") {
			return
		}
		rm, ok := table.match("", clean)
		if !ok {
			return
		}
		read := norm.NFKC.String(fold.String(norm.NFKC.String(clean)))
		if strings.ContainsAny(read, "%?#") {
			return
		}
		if c, err := reqcheck.CleanPath(read); err != nil || c != read {
			return
		}
		other := table.find("", matchKey(read))
		if other != rm {
			t.Fatalf("match(%q) is room %v; read as %q by NFKC_Casefold it is room %v", clean, roomName(rm), read, roomName(other))
		}
	})
}

func roomName(rm *room) string {
	if rm == nil {
		return "(none)"
	}
	return rm.queue
}

// BenchmarkMatch is the route lookup of every gated request: an ASCII
// path (the common case, which the fold check scans once) and
// a path with non-ASCII letters that fold (a map lookup per rune, then
// a second lookup of the folded path).
func BenchmarkMatch(b *testing.B) {
	routes, err := ParseRoutes("/sale/concert-a/=concert-a,/sale/=sale,shop.example/=default")
	if err != nil {
		b.Fatal(err)
	}
	table, err := newRouteTable(routes, "other", "/q/{queue}", true)
	if err != nil {
		b.Fatal(err)
	}
	for name, p := range map[string]string{"ascii": "/sale/concert-a/seat/12", "folding": "/sale/concert-a/\u017feat/\uff11\uff12"} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				table.match("www.example:443", p)
			}
		})
	}
}
