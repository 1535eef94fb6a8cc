package config

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/gate"
)

// WAITROOM_GATE_FAIL takes closed, open or strict (closed when unset or
// blank) and nothing else: a typo must not start a gate that fails open,
// nor one that quietly fails closed when open was meant.
func TestGateFail(t *testing.T) {
	for _, tc := range []struct {
		v, want string
		ok      bool
	}{
		{"", "closed", true},
		{"   ", "closed", true},
		{"closed", "closed", true},
		{"open", "open", true},
		{" strict ", "strict", true},
		{"Open", "", false},
		{"OPEN", "", false},
		{"opened", "", false},
		{"off", "", false},
		{"true", "", false},
		{"0", "", false},
		{"open,strict", "", false},
		{"fail-open", "", false},
		{"ope\u200bn", "", false},
	} {
		c, err := Load(env(map[string]string{"WAITROOM_GATE_FAIL": tc.v}))
		if !tc.ok {
			if err == nil || !strings.Contains(err.Error(), "WAITROOM_GATE_FAIL: want closed, open or strict") {
				t.Errorf("%q: %v, want a WAITROOM_GATE_FAIL error", tc.v, err)
			}
			continue
		}
		if err != nil || c.GateFail != tc.want {
			t.Errorf("%q: %q, %v; want %q", tc.v, c.GateFail, err, tc.want)
		}
	}
	c, err := Load(env(nil))
	if err != nil || c.GateFail != "closed" {
		t.Fatalf("unset: %q, %v", c.GateFail, err)
	}
}

// Generated values: config takes exactly what the gate takes (trimmed),
// so every value that loads names a gate.FailMode.
func TestGateFailGenerated(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 3))
	alphabet := []rune("closedpntrictOPENCLS \t,;=-_\x00é\u00a0")
	for i := range 3000 {
		var b strings.Builder
		n := rng.IntN(9)
		for range n {
			b.WriteRune(alphabet[rng.IntN(len(alphabet))])
		}
		v := b.String()
		if i%10 == 0 { // near misses of the real names
			v = []string{"closed", "open", "strict"}[rng.IntN(3)]
			v = v[:rng.IntN(len(v)+1)] + string(alphabet[rng.IntN(len(alphabet))]) + v[rng.IntN(len(v)+1):]
		}
		c, err := Load(env(map[string]string{"WAITROOM_GATE_FAIL": v}))
		trimmed := strings.TrimSpace(v)
		_, gateErr := gate.ParseFailMode(trimmed)
		switch {
		case trimmed == "":
			if err != nil || c.GateFail != "closed" {
				t.Fatalf("%q: %q, %v; want the default", v, c.GateFail, err)
			}
		case gateErr == nil:
			if err != nil || c.GateFail != trimmed {
				t.Fatalf("%q: %q, %v; want %q", v, c.GateFail, err, trimmed)
			}
		default:
			if err == nil {
				t.Fatalf("%q loaded as %q; the gate refuses it: %v", v, c.GateFail, gateErr)
			}
		}
	}
}
