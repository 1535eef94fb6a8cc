package soak

import (
	"bytes"
	"context"
	"os/exec"
	"testing"
	"time"
)

// TestSoakShort is CI's soak: every fault, a few hundred users, two
// replicas, 12 s of load per phase (about 1.5 minutes in all). It fails
// on any violation, and also when the checks had nothing to look at.
func TestSoakShort(t *testing.T) {
	if testing.Short() {
		t.Skip("the soak runs processes for a minute or two")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatal("redis-server is not on PATH: run scripts/install-tools.sh test")
	}
	const users = 300
	var log bytes.Buffer
	// The compile comes before the soak's deadline, with a bound of its
	// own: it takes minutes of CPU on a busy 2-core machine, and it is not
	// what the soak measures.
	buildCtx, cancelBuild := context.WithTimeout(context.Background(), 15*time.Minute)
	bin, err := Build(buildCtx, t.TempDir(), &log)
	cancelBuild()
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	phases, err := Run(ctx, Options{
		Seed: 7, Users: users, Replicas: 2, Duration: 12 * time.Second,
		Faults: AllFaults, Bin: bin,
		// 5 a second against 300 arrivals in 6 s: a line forms, so the
		// FIFO check has waiting users to compare.
		RefillSize: 5, RefillInterval: time.Second,
		// A call may take the request timeout and 5 s more: on a 2-core
		// machine also running a build, the clients, the replicas and
		// Redis share the cores, and a switchover's calls took up to 5.2 s
		// there (load 13). A hang still fails: its call runs to the
		// client's own timeout. (The soak command keeps its 1 s.)
		Slack: 5 * time.Second,
		Log:   &log,
	})
	var table bytes.Buffer
	WriteTable(&table, phases)
	t.Logf("soak:\n%s\n%s", log.String(), table.String())
	if err != nil {
		t.Fatal(err)
	}
	if len(phases) != len(AllFaults) {
		t.Fatalf("%d phases ran, want %d", len(phases), len(AllFaults))
	}
	for _, p := range phases {
		r := p.Report
		if p.Err != nil || !p.Injected {
			t.Errorf("%s: injected %v, err %v", p.Fault, p.Injected, p.Err)
		}
		if r.Failed() {
			t.Errorf("%s: violations: %+v", p.Fault, r.Violations)
		}
		// The checks ran on something: the users got places, the
		// line moved, and the FIFO check compared users admitted and
		// still waiting (fewer in a phase where many calls failed: an
		// enter of unknown outcome is left out of it).
		// The line is longer than near_head (refill 5 × 10 ticks with
		// abandonment off), so far-back polls were answered from the
		// replicas' snapshots and the invariants held with that path on.
		if r.Members < users*9/10 || r.Ops < 3*users || r.Admissions < 20 || r.FIFOBase < users/4 || r.WaitingAtEnd == 0 || r.Estimated == 0 {
			t.Errorf("%s: too little was checked: %d members, %d ops, %d admissions, %d in the FIFO check, %d waiting at the end, %d far-back answers",
				p.Fault, r.Members, r.Ops, r.Admissions, r.FIFOBase, r.WaitingAtEnd, r.Estimated)
		}
		// A Redis away for longer than the request timeout must have
		// failed calls (and none may have hung: r.Slow).
		if (p.Fault == FaultPauseRedis || p.Fault == FaultRestartRedis) && r.Unknown == 0 {
			t.Errorf("%s: no call failed while Redis was away: was the fault applied?", p.Fault)
		}
	}
}
