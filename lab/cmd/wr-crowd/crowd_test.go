package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/testkit/redistest"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

// The model at 1/20 scale (1,000 people, 100 places a farm; the same
// densities per network, calm arrivals scaled alike) meets every target:
// no person asked above the ceiling; with the networks file, people's p99
// at most 2^13 hashes, members paying nothing and the hosting farm the
// ceiling or a human check for every place; with escalate, a human check
// for every residential-farm place beyond its networks' first; and the
// line keeps people in the order they entered, every way.
func TestCrowdModelTargets(t *testing.T) {
	if testing.Short() {
		t.Skip("the crowd model: 3,900 places against Redis")
	}
	rdb := redistest.Client(t)
	cfg := modelConfig{scale: 0.05, seed: 1, workers: 8, bits: 13, calm: 100, maxAttempts: 8, shape: fullShape,
		queuePrefix: fmt.Sprintf("crowd%d", time.Now().UnixNano())}
	results, err := runWays(context.Background(), rdb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	report(&b, config{modelConfig: cfg, rate: 65_000, botRate: 1_330_000}, results)
	t.Log("\n" + b.String())
	for i, r := range results {
		for _, miss := range targets(r, i) {
			t.Error(miss)
		}
	}
	// The ways differ as they should: without the file the carriers'
	// people pay the ceiling, with it nothing; escalate turns the farms'
	// proof of work into human checks.
	carriers := func(r *wayResult) personStats { return r.people(func(k kind) bool { return k == carrierPerson }) }
	if c := carriers(results[0]); c.p50 < 1<<16 {
		t.Errorf("no file: carriers' people p50 %s hashes, want about the ceiling", pow(c.p50))
	}
	if c := carriers(results[1]); c.max > 0 {
		t.Errorf("with the file: carriers' people max %s hashes, want none", pow(c.max))
	}
	if h := results[2].farm(hostingFarm, 17); h.checked != h.got || h.hashes != 0 {
		t.Errorf("escalate: the hosting farm %d places, %d by a human check, %s hashes", h.got, h.checked, pow(h.hashes))
	}
}

func TestPopulationShape(t *testing.T) {
	agents, networks := population(fullShape, 1, 1)
	var count [kinds]int
	seen := map[string]bool{}
	for _, a := range agents {
		count[a.kind]++
		if seen[a.user] {
			t.Fatalf("user %s twice", a.user)
		}
		seen[a.user] = true
	}
	want := [kinds]int{8000, 6000, 6000, 2000, 2000, 2000}
	if count != want {
		t.Fatalf("kinds %v, want %v", count, want)
	}
	wantNets := [kinds]int{40, 1200, 6000, 20, 200, 1}
	if networks != wantNets {
		t.Fatalf("networks %v, want %v", networks, wantNets)
	}
	// The shuffle interleaves: the first 1,000 arrivals hold every kind.
	var early [kinds]int
	for _, a := range agents[:1000] {
		early[a.kind]++
	}
	for k, n := range early {
		if n == 0 {
			t.Fatalf("no %s among the first 1,000 arrivals", kindNames[k])
		}
	}
}
