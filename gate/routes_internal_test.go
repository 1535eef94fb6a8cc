package gate

import "testing"

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
