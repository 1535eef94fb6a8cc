package paid

import (
	"context"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/hygiene/netclass"
	"github.com/waitroom/waitroom/internal/trust/humancheck"
)

// Settings reads a queue's stored settings by name (queue.Inspector.Values).
type Settings interface {
	Values(ctx context.Context, queue string) (map[string]any, error)
}

// Sources are where a queue's Policy comes from: the replica's price, the
// queue's human_check, the networks file and the human check's provider.
type Sources struct {
	// Price is the replica's price of a place (config's Defaults.Price).
	Price queue.Price
	// Settings reads the queue's human_check (one Redis call).
	Settings Settings
	// NetworksFile: WAITROOM_NETWORKS_FILE is set; Networks its watcher
	// (nil: no table).
	NetworksFile bool
	Networks     *netclass.Watcher
	// Human is the human check's provider (nil: none).
	Human *humancheck.Checker
}

// Policy returns queue's policy in force.
func (s Sources) Policy(ctx context.Context, q string) (Policy, error) {
	p := Policy{
		CeilingBits:  s.Price.MaxBits,
		NetworkBits:  s.Price.Bits,
		CalmArrivals: s.Price.CalmArrivals,
		Networks:     Networks{File: s.NetworksFile, Prefixes: map[string]int{}},
		HumanCheck:   HumanPolicy{Mode: queue.HumanOff, Provider: "off"},
	}
	if p.CeilingBits == 0 {
		p.CeilingBits = queue.DefaultMaxBits
	}
	at, sizes := s.Networks.Loaded()
	for c, n := range sizes {
		if c != netclass.Default { // the default class lists no prefix of its own
			p.Networks.Prefixes[c.String()] = n
		}
	}
	if s.NetworksFile {
		p.Networks.LoadedAt = Stamp(at)
	}
	if s.Settings != nil {
		v, err := s.Settings.Values(ctx, q)
		if err != nil {
			return Policy{}, err
		}
		if m, _ := v["human_check"].(string); m != "" {
			p.HumanCheck.Mode = m
		}
	}
	if s.Human.Enabled() {
		h := s.Human.Health()
		p.HumanCheck.Provider, p.HumanCheck.Healthy = h.Provider, h.Healthy
		p.HumanCheck.LastOK, p.HumanCheck.LastFailure = Stamp(h.LastOK), Stamp(h.LastFailure)
		p.HumanCheck.ConsecutiveFailures = h.ConsecutiveFailures
	}
	return p, nil
}
