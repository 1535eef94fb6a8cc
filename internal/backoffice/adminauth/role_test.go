package adminauth

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestParseMapping(t *testing.T) {
	m, err := ParseMapping(" wr-admin=admin , wr-ops=operator:sale|refund,wr-view=viewer,wr-ops=viewer")
	if err != nil {
		t.Fatal(err)
	}
	want := Mapping{
		"wr-admin": {{Role: Admin}},
		"wr-ops":   {{Role: Operator, Queues: []string{"sale", "refund"}}, {Role: Viewer}},
		"wr-view":  {{Role: Viewer}},
	}
	if len(m) != len(want) {
		t.Fatalf("%v", m)
	}
	for g, gs := range want {
		if !slices.EqualFunc(m[g], gs, func(a, b Grant) bool { return a.Role == b.Role && slices.Equal(a.Queues, b.Queues) }) {
			t.Errorf("%s: %v, want %v", g, m[g], gs)
		}
	}
	for _, bad := range []string{"", ",", "wr=root", "=admin", "wr", "wr=admin:sale", "wr=viewer:", "wr=viewer:a{b}", "wr=operator:sale|"} {
		if _, err := ParseMapping(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestPrincipalAllows(t *testing.T) {
	p := Principal{Grants: []Grant{{Role: Operator, Queues: []string{"sale"}}, {Role: Viewer}}}
	for _, c := range []struct {
		role  Role
		queue string
		want  bool
	}{
		{Viewer, "sale", true}, {Viewer, "refund", true}, {Viewer, "", true},
		{Operator, "sale", true}, {Operator, "refund", false}, {Operator, "", false},
		{Admin, "sale", false}, {Admin, "", false},
	} {
		if got := p.Allows(c.role, c.queue); got != c.want {
			t.Errorf("Allows(%v, %q) = %v", c.role, c.queue, got)
		}
	}
	if p.Role() != Operator {
		t.Errorf("role %v", p.Role())
	}
	if (Principal{}).Allows(Viewer, "sale") {
		t.Error("no grant allows something")
	}
}

// TestAllowsProperties over generated principals: a role allows all that
// the roles below it allow, an admin allows everything, and a grant of
// every queue allows every queue.
func TestAllowsProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	queues := []string{"a", "b", "c", ""}
	for i := 0; i < 5000; i++ {
		var p Principal
		for n := r.IntN(4); n > 0; n-- {
			g := Grant{Role: Role(1 + r.IntN(3))}
			if g.Role != Admin && r.IntN(2) == 0 {
				for _, q := range queues[:3] {
					if r.IntN(2) == 0 {
						g.Queues = append(g.Queues, q)
					}
				}
			}
			p.Grants = append(p.Grants, g)
		}
		for _, q := range queues {
			if p.Allows(Admin, q) && !p.Allows(Operator, q) || p.Allows(Operator, q) && !p.Allows(Viewer, q) {
				t.Fatalf("%+v on %q: a higher role allows what a lower does not", p, q)
			}
			if p.Allows(Viewer, "") && q != "" && !p.Allows(Viewer, q) {
				t.Fatalf("%+v: every queue but not %q", p, q)
			}
			if p.Role() == Admin && !p.Allows(Admin, q) {
				t.Fatalf("%+v: an admin refused %q", p, q)
			}
			if p.Role() < Viewer && p.Sees(q) {
				t.Fatalf("%+v: no grant sees %q", p, q)
			}
		}
	}
}
