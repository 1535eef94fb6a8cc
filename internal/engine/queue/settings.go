package queue

import (
	"fmt"
	"math"
)

// Settings as data: every setting of a queue is one row of
// Catalog, and what handles settings is derived from the rows: the
// environment's defaults (internal/config), the PATCH parser
// (internal/web/adminapi), Update.Validate and ValidateSettings, the HASH
// fields UpdateSettings writes and Seed seeds, the start-up warning about
// stored settings that differ from the environment (EnvDiff), the
// settings_changed event, the audit log's redaction, the admin view
// (Values), the back office's fields (GET /admin/v1/settings/catalog:
// Form, Label, Hint, Scale), the settings the scripts read by name
// (Lua: queue_config in common_config.lua) and the settings in the API contract
// (api/openapi.yaml's generated blocks, api/settings_test.go).
//
// A row's Go value lives in the Update field tagged `setting:"<Name>"`
// (and the Settings one, when the environment seeds it): adding an
// integer setting, with its field in the back office, is a row here, a
// tagged field in types.go, and the script that uses it; then
// WAITROOM_UPDATE_DOCS=1 go test -run TestOpenAPISettings ./api/ writes
// it into the contract.

// Kind is how a setting's value reads, and is stored in the config HASH.
type Kind int

// The kinds of setting, with the Go type of their value.
const (
	KindInt    Kind = iota + 1 // int: a whole number from Min to Max
	KindMillis                 // time.Duration: ms in JSON and the HASH, a Go duration ("2m") in the environment; Min, Max in ms
	KindBool                   // bool: true or false; 1 or 0 in the HASH
	KindRate                   // float64: a share from 0 to 1
	KindURL                    // string: an absolute http(s) URL without credentials of at most Max bytes, or "" for none
	KindString                 // string: at most Max bytes, "" for the default; its form is checked by the caller
	KindTime                   // time.Time: RFC 3339, or null or "" for none; unix ms in the HASH (0: none)
	KindLine                   // map[string]string: a text of one line by language tag, at most Max characters; JSON in the HASH
	KindText                   // map[string]string: the same, line breaks allowed
	KindLanes                  // Lanes: a list of {"name", "share"} (lanes.go); JSON in the HASH and the environment
)

// kindNames are the kinds as the settings catalog (GET
// /admin/v1/settings/catalog) names them.
var kindNames = map[Kind]string{KindInt: "int", KindMillis: "millis", KindBool: "bool", KindRate: "rate", KindURL: "url",
	KindString: "string", KindTime: "time", KindLine: "line", KindText: "text", KindLanes: "lanes"}

func (k Kind) String() string { return kindNames[k] }

// number reports whether the config HASH holds the kind as a number (a
// bool as 1 or 0, a time as unix ms), which the scripts read as one.
func (k Kind) number() bool {
	switch k {
	case KindInt, KindMillis, KindBool, KindRate, KindTime:
		return true
	}
	return false
}

// Role says who may change a setting.
type Role int

// The roles.
const (
	// RoleStartup: only the environment sets it, when Seed seeds a queue.
	RoleStartup Role = iota + 1
	// RoleOperator: an operator changes it live too (PATCH
	// /admin/v1/queues/{queue}, the back office).
	RoleOperator
	// RoleAdmin: changed live too, by an admin only: it makes waitroom
	// send data to, or reach, another host (a webhook, a probe).
	RoleAdmin
)

// Live reports whether the setting can be changed while the service
// runs (by an operator, or an admin).
func (r Role) Live() bool { return r >= RoleOperator }

func (r Role) String() string {
	switch r {
	case RoleOperator:
		return "operator"
	case RoleAdmin:
		return "admin"
	}
	return "startup"
}

// SeedMode says whether Seed stores the environment's value.
type SeedMode int

// The seed modes.
const (
	SeedNever  SeedMode = iota // nothing to seed: no variable, or not stored
	SeedAlways                 // stored where none is yet
	// SeedIfSet: stored only when not zero; unstored, the environment's
	// value applies (a queue can be switched on from the environment
	// until an operator sets it).
	SeedIfSet
)

// Unbounded is a Max without bound.
const Unbounded = math.MaxInt64

// Setting is one setting of a queue.
type Setting struct {
	Name    string // the field of PATCH and of the admin view; FieldError.Field
	Hash    string // its field in the config HASH
	Env     string // the environment variable of its default ("": none)
	Default string // the variable's default, written as the variable is
	Kind    Kind
	// Min and Max bound a number (ms for KindMillis), or Max a string's
	// bytes or a text's characters.
	Min, Max int64
	// Choices, for a KindString, are the only values it takes ("" too,
	// for the first).
	Choices []string
	// Lua: the scripts read it, as a field of the table queue_config
	// returns (common_config.lua), named by Hash: a number unless its Kind is
	// text, and while not stored the replica's default (Seed SeedAlways)
	// or its Kind's zero, the first of Choices for a string that has
	// them (configLua, scripts.go, writes that Lua).
	Lua  bool
	Role Role
	Seed SeedMode
	// Private: left out of settings_changed, and audited by host only
	// (it may carry the receiver's token).
	Private bool
	// Doc is what the setting does, as api/openapi.yaml says it
	// (generated: httpapi's TestOpenAPISettings).
	Doc string
	// The back office's field for it, which the page builds from the
	// catalog (GET /admin/v1/settings/catalog): Form is the group it
	// shows in ("": no field, or a form of its own); Label and Hint are
	// its English words (i18n/admin/<lang>.json's "setting.<Name>" and
	// "setting.<Name>.hint" translate them); Scale is the API's units per
	// unit the field shows (1000: seconds for ms; 0 or 1: as the API).
	Form        string
	Label, Hint string
	Scale       float64
}

// The back office's groups of setting fields (Setting.Form).
const (
	FormLine  = "line"  // the line's admission settings
	FormAdapt = "adapt" // the automatic rate's
)

// Catalog is every setting of a queue. Order matters only for people:
// the PATCH's list of settings and the first fault Validate reports.
var Catalog = []Setting{
	{Name: "refill_size", Hash: "refill_size", Env: "WAITROOM_REFILL_SIZE", Default: "10", Kind: KindInt, Min: 1, Max: MaxRefillSize, Lua: true, Role: RoleOperator, Seed: SeedAlways,
		Doc:  "Users admitted per interval.",
		Form: FormLine, Label: "New refill size", Hint: "(1 – 100,000 per tick)"},
	{Name: "refill_interval_ms", Hash: "refill_interval_ms", Env: "WAITROOM_REFILL_INTERVAL", Default: "5s", Kind: KindMillis, Min: 1, Max: Unbounded, Lua: true, Role: RoleStartup, Seed: SeedAlways,
		Doc: "Time between ticks (WAITROOM_REFILL_INTERVAL)."},
	{Name: "session_ttl_ms", Hash: "session_ttl_ms", Env: "WAITROOM_SESSION_TTL", Default: "10m", Kind: KindMillis, Min: 1, Max: Unbounded, Lua: true, Role: RoleStartup, Seed: SeedAlways,
		Doc: "How long an admission stays valid (WAITROOM_SESSION_TTL)."},
	{Name: "max_active", Hash: "max_active", Env: "WAITROOM_MAX_ACTIVE", Default: "0", Kind: KindInt, Min: 0, Max: MaxMaxActive, Lua: true, Role: RoleOperator, Seed: SeedAlways,
		Doc:  "Cap of admissions that have not ended (0 - none).",
		Form: FormLine, Label: "Max active users", Hint: "(0 = no cap; up to 10,000,000)"},
	{Name: "max_waiting", Hash: "max_waiting", Kind: KindInt, Min: 0, Max: MaxMaxWaiting, Lua: true, Role: RoleOperator,
		Doc:  "The line's cap (0 - none); beyond it a newcomer's enter answers 503 `queue_full`.",
		Form: FormLine, Label: "Max people waiting", Hint: "(0 = no cap; up to 100,000,000)"},
	{Name: "challenge_difficulty", Hash: "challenge_difficulty", Kind: KindInt, Min: 0, Max: MaxChallengeDifficulty, Lua: true, Role: RoleOperator,
		Doc:  "The proof of work asked before entering, in leading zero bits (0 - none).",
		Form: FormLine, Label: "Proof of work (difficulty)", Hint: "(0 = off; up to 32; 16 ≈ 1 s for a person on this machine, each +1 doubles it)"},
	{Name: "human_check", Hash: "human_check", Kind: KindString, Max: 16, Choices: []string{HumanOff, HumanEscalate, HumanAlways}, Lua: true, Role: RoleOperator,
		Doc: "A human check (WAITROOM_HUMAN_CHECK's provider) before entering: `off`; `escalate`, asked instead of proof of work of a " +
			"network past its free place, of a `hosting` network, and of anyone the ceiling would otherwise have priced higher; " +
			"`always`, of everyone. While the provider is unreachable, proof of work at the ceiling instead. null or \"\" for `off`."},
	{Name: "abandon_after_ms", Hash: "abandon_after_ms", Env: "WAITROOM_ABANDON_AFTER", Default: "2m", Kind: KindMillis, Min: 0, Max: MaxAbandonAfter.Milliseconds(), Lua: true, Role: RoleOperator, Seed: SeedAlways,
		Doc:  "How long a waiting place may go unheard before the tick drops it when the line reaches it (0 - never).",
		Form: FormLine, Label: "Drop places unheard for (s)", Hint: "(0 = never; up to 86,400)", Scale: 1000},
	{Name: "paused", Hash: "paused", Kind: KindBool, Lua: true, Role: RoleOperator,
		Doc: "Paused, nobody is admitted and everyone waiting keeps their place."},
	{Name: "opens_at", Hash: "opens_at_ms", Kind: KindTime, Lua: true, Role: RoleOperator,
		Doc: "A scheduled opening; null or \"\" for none."},
	{Name: "prequeue_from", Hash: "prequeue_from_ms", Kind: KindTime, Lua: true, Role: RoleOperator,
		Doc: "When the pre-queue window before opens_at begins; null or \"\" for none."},
	{Name: "webhook_url", Hash: "webhook_url", Kind: KindString, Max: MaxWebhookURLBytes, Role: RoleAdmin, Private: true,
		Doc: "Where this queue's events go (docs/WEBHOOKS.md), instead of WAITROOM_WEBHOOK_URL; null or \"\" for that default. " +
			"An absolute https URL (plain http only to a loopback host, or with WAITROOM_WEBHOOK_INSECURE_HTTP). " +
			"Takes effect within 5 s; the audit log keeps its host only."},
	{Name: "title", Hash: "title", Kind: KindLine, Max: MaxTitleRunes, Role: RoleOperator,
		Doc: "The queue's title on its waiting page, by language; replaces every language's; null or {} for none. Set as text, never markup."},
	{Name: "message", Hash: "message", Kind: KindText, Max: MaxMessageRunes, Role: RoleOperator,
		Doc: "The queue's message on its waiting page, by language, the same way; it may break lines."},
	{Name: "lanes", Hash: "lanes", Env: "WAITROOM_LANES", Default: "", Kind: KindLanes, Role: RoleOperator, Seed: SeedIfSet,
		Doc: "The lanes: a list of `{\"name\": \"priority\", \"share\": 0.3}`, names `[a-z0-9-]{1,32}`, shares in (0, 1] " +
			"summing to at most 1, at most 8; the rest of every interval is the general lane's. A place joins a lane only through a join " +
			"token whose `lane` claim names it. `[]` or null for none; a value refused is 400 `invalid_lanes`. A lane removed keeps " +
			"its places, served with no share, until it is empty."},
	{Name: "adapt_enabled", Hash: "adapt_enabled", Env: "WAITROOM_ADAPT_ENABLED", Default: "false", Kind: KindBool, Lua: true, Role: RoleOperator, Seed: SeedIfSet,
		Doc: "The order page's health drives the rate (docs/ARCHITECTURE.md, \"The order page's health drives the rate\"). " +
			"Off, `refill_size` is what each interval admits again at once."},
	{Name: "origin_target_p95_ms", Hash: "origin_target_p95_ms", Env: "WAITROOM_ORIGIN_TARGET_P95", Default: "0s", Kind: KindMillis, Min: 0, Max: MaxOriginTargetP95.Milliseconds(), Role: RoleOperator, Seed: SeedIfSet,
		Doc:  "Over this p95 of the order page's answers the effective refill drops (0 - not checked).",
		Form: FormAdapt, Label: "Target p95 of the order page (ms)", Hint: "(0 = not checked; up to 600,000)"},
	{Name: "origin_max_error_rate", Hash: "origin_max_error_rate", Env: "WAITROOM_ORIGIN_MAX_ERROR_RATE", Default: "0", Kind: KindRate, Role: RoleOperator, Seed: SeedIfSet,
		Doc:  "Over this share of error answers (5xx, none) the effective refill drops (0 - not checked).",
		Form: FormAdapt, Label: "Max error rate (%)", Hint: "(0 = not checked; up to 100)", Scale: 0.01},
	{Name: "min_refill_size", Hash: "min_refill_size", Env: "WAITROOM_MIN_REFILL_SIZE", Default: "0", Kind: KindInt, Min: 0, Max: MaxRefillSize, Lua: true, Role: RoleOperator, Seed: SeedIfSet,
		Doc:  "The floor of the effective refill (never below 1, nor above `refill_size`).",
		Form: FormAdapt, Label: "Floor (least per tick)", Hint: "(0 – 100,000)"},
	{Name: "origin_probe_url", Hash: "origin_probe_url", Env: "WAITROOM_ORIGIN_PROBE_URL", Default: "", Kind: KindURL, Max: MaxProbeURLBytes, Role: RoleAdmin, Seed: SeedIfSet,
		Doc: "A page of the site one replica at a time polls every second, for a forward-auth or SDK deployment; null or \"\" for none. " +
			"An absolute http or https URL without credentials.",
		Form: FormAdapt, Label: "Probe URL", Hint: "(empty = none; one replica polls it every second)"},
}

// FieldError is a setting's value refused: Field is the setting's Name,
// Err says what it must be ("must be an integer from 0 to 32").
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return "queue: " + e.Field + " " + e.Err.Error() }
func (e *FieldError) Unwrap() error { return e.Err }

func fieldError(name, format string, a ...any) *FieldError {
	return &FieldError{Field: name, Err: fmt.Errorf(format, a...)}
}

// Lookup finds the setting named name.
func Lookup(name string) (Setting, bool) {
	for _, st := range Catalog {
		if st.Name == name {
			return st, true
		}
	}
	return Setting{}, false
}

// OperatorSettings are the names that may be changed live (by an
// operator or an admin), in Catalog order.
func OperatorSettings() []string {
	var names []string
	for _, st := range Catalog {
		if st.Role.Live() {
			names = append(names, st.Name)
		}
	}
	return names
}
