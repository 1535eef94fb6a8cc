package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/waitroom/waitroom/internal/gate/command"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
)

// TestCommands: every series of the configured queues (and of "", no
// pass) exists from the start, a command counts once under its labels,
// and a queue or result nobody configured adds no series.
func TestCommands(t *testing.T) {
	t.Parallel()
	q := uniq("cmd")
	m := New(newStore(t, redistest.Client(t), q))
	m.Command(q, "done", command.ResultOK)
	m.Command("", "extend", command.ResultNoPass)
	m.Command("not-configured", "done", command.ResultOK)
	m.Command(q, "done", "made up")
	if got := testutil.ToFloat64(m.commands[commandKey{q, "done", command.ResultOK}]); got != 1 {
		t.Errorf("done ok: %v", got)
	}
	if got := testutil.ToFloat64(m.commands[commandKey{"", "extend", command.ResultNoPass}]); got != 1 {
		t.Errorf("extend no_pass: %v", got)
	}
	want := 2 * len(command.Commands) * len(command.Results)
	if n, err := testutil.GatherAndCount(m.reg, "waitroom_gate_commands_total"); err != nil || n != want {
		t.Fatalf("%d series (%v), want %d", n, err, want)
	}
}
