package httpapi

// adminQueueJSON is the admin view as a client reads it, field by field:
// the tests decode answers into it (adminapi.QueueView writes its
// settings from the catalog, so it has no typed fields to read back).
type adminQueueJSON struct {
	Queue                string            `json:"queue"`
	Routes               []string          `json:"routes"`
	Waiting              int64             `json:"waiting"`
	Entered              int64             `json:"entered"`
	Active               int64             `json:"active"`
	MaxActive            int               `json:"max_active"`
	MaxWaiting           int               `json:"max_waiting"`
	ChallengeDifficulty  int               `json:"challenge_difficulty"`
	Title                map[string]string `json:"title"`
	Message              map[string]string `json:"message"`
	Paused               bool              `json:"paused"`
	AbandonAfterMS       int64             `json:"abandon_after_ms"`
	AbandonedLast        int64             `json:"abandoned_last_interval"`
	OpensAt              string            `json:"opens_at,omitempty"`
	PrequeueFrom         string            `json:"prequeue_from,omitempty"`
	DrawFor              string            `json:"draw_for,omitempty"`
	DrawSeed             string            `json:"draw_seed,omitempty"`
	DrawCommitment       string            `json:"draw_commitment,omitempty"`
	DrawSealed           string            `json:"draw_sealed,omitempty"`
	DrawPlacing          bool              `json:"draw_placing,omitempty"`
	DrawCount            int64             `json:"draw_count,omitempty"`
	Tokens               int64             `json:"tokens"`
	RefillSize           int               `json:"refill_size"`
	RefillIntervalMS     int64             `json:"refill_interval_ms"`
	SessionTTLMS         int64             `json:"session_ttl_ms"`
	SessionMaxMS         int64             `json:"session_max_ms,omitempty"`
	LastTickAtMS         int64             `json:"last_tick_at_ms"`
	AdmittedLastMinute   int64             `json:"admitted_last_minute"`
	GateFailOpenRequests int64             `json:"gate_fail_open_requests"`
	GateFailOpenLastAtMS int64             `json:"gate_fail_open_last_at_ms"`
	AdaptEnabled         bool              `json:"adapt_enabled"`
	OriginTargetP95MS    int64             `json:"origin_target_p95_ms"`
	OriginMaxErrorRate   float64           `json:"origin_max_error_rate"`
	MinRefillSize        int               `json:"min_refill_size"`
	OriginProbeURL       string            `json:"origin_probe_url"`
	RefillEffective      int               `json:"refill_effective"`
}
