package paid

import (
	"context"
	"time"
)

// Policy is the price of a place in force for a queue, as the operator
// configured it: what a visitor may be asked, before what they paid.
type Policy struct {
	// CeilingBits is the most proof of work any place costs
	// (WAITROOM_POW_MAX_BITS).
	CeilingBits int `json:"ceiling_bits"`
	// NetworkBits is the price's base: what a network's second place
	// costs (WAITROOM_POW_NETWORK_BITS; 0: no price).
	NetworkBits int `json:"network_bits"`
	// CalmArrivals is the arrivals a second above which every price
	// rises (WAITROOM_POW_CALM_ARRIVALS; 0: never).
	CalmArrivals float64     `json:"calm_arrivals"`
	Networks     Networks    `json:"networks"`
	HumanCheck   HumanPolicy `json:"human_check"`
}

// Networks is the operator's table of network classes as last loaded.
type Networks struct {
	// File: a networks file is configured (WAITROOM_NETWORKS_FILE).
	File bool `json:"file"`
	// LoadedAt is when it was last read (null: never, or no file).
	LoadedAt *time.Time `json:"loaded_at"`
	// Prefixes are its prefixes per class name (shared, hosting).
	Prefixes map[string]int `json:"prefixes"`
}

// HumanPolicy is the queue's human check and its provider's health on
// this replica.
type HumanPolicy struct {
	// Mode is the queue's human_check: off, escalate or always.
	Mode string `json:"mode"`
	// Provider is the configured provider ("off": none).
	Provider            string     `json:"provider"`
	Healthy             bool       `json:"healthy"`
	LastOK              *time.Time `json:"last_ok"`      // null: never
	LastFailure         *time.Time `json:"last_failure"` // null: never
	ConsecutiveFailures int        `json:"consecutive_failures"`
}

// Defences is a queue's policy in force and what its visitors paid over
// the last minutes: GET /admin/v1/queues/{queue}/defences.
type Defences struct {
	Queue       string  `json:"queue"`
	Policy      Policy  `json:"policy"`
	LastMinutes int     `json:"last_minutes"`
	Paid        Summary `json:"paid"`
}

// DefaultMinutes is the window the back office shows.
const DefaultMinutes = 5

// Viewer answers a queue's Defences: the policy from its source, what was
// paid from the recorder.
type Viewer struct {
	Recorder *Recorder
	// Policy returns the queue's policy in force (the price's settings,
	// the networks file, the human check).
	Policy func(ctx context.Context, queue string) (Policy, error)
	// Minutes is the window (0: DefaultMinutes).
	Minutes int
}

// View returns queue's defences.
func (v Viewer) View(ctx context.Context, queue string) (Defences, error) {
	minutes := v.Minutes
	if minutes <= 0 {
		minutes = DefaultMinutes
	}
	d := Defences{Queue: queue, LastMinutes: minutes}
	if v.Policy != nil {
		p, err := v.Policy(ctx, queue)
		if err != nil {
			return Defences{}, err
		}
		d.Policy = p
	}
	s, err := v.Recorder.Summary(ctx, queue, minutes)
	if err != nil {
		return Defences{}, err
	}
	d.Paid = s
	return d, nil
}

// Stamp is t for a JSON field that is null when t is zero.
func Stamp(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}
