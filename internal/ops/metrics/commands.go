package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom/internal/gate/command"
)

// commandKey is one series of waitroom_gate_commands_total.
type commandKey struct{ queue, command, result string }

// newCommands is waitroom_gate_commands_total: every series of the
// configured queues made at once, and of "" (no valid pass named one).
func newCommands(reg prometheus.Registerer, queues []string) map[commandKey]prometheus.Counter {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "gate", Name: "commands_total",
		Help: "The order page's commands (Waitroom-Command, POST .../commands and .../done): command=done, extend or other; " +
			"result=ok, unchanged, not_current, no_pass (queue=\"\": no valid pass, nothing done), limited (past the per-pass bound), " +
			"unsupported (extend without sliding sessions), unknown (other) or failed (Redis).",
	}, []string{"queue", "command", "result"})
	reg.MustRegister(vec)
	m := map[commandKey]prometheus.Counter{}
	for _, q := range append([]string{""}, queues...) {
		for _, c := range command.Commands {
			for _, r := range command.Results {
				m[commandKey{q, c, r}] = vec.WithLabelValues(q, c, r)
			}
		}
	}
	return m
}

// Command counts one of the order page's commands (command.Options.Count);
// a queue that is not configured is not counted.
func (m *Metrics) Command(queue, cmd, result string) {
	if c := m.commands[commandKey{queue, cmd, result}]; c != nil {
		c.Inc()
	}
}
