package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Settings as data (issue 27): every setting of a queue is one row of
// Catalog, and what handles settings is derived from the rows: the
// environment's defaults (internal/config), the PATCH parser
// (internal/httpapi), Update.Validate and ValidateSettings, the HASH
// fields UpdateSettings writes and Seed seeds, the start-up warning about
// stored settings that differ from the environment (EnvDiff), the
// settings_changed event, the audit log's redaction, the admin view
// (Values), the back office's fields (GET /admin/v1/settings/catalog:
// Form, Label, Hint, Scale) and the settings in the API contract
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
)

// kindNames are the kinds as the settings catalog (GET
// /admin/v1/settings/catalog) names them.
var kindNames = map[Kind]string{KindInt: "int", KindMillis: "millis", KindBool: "bool", KindRate: "rate", KindURL: "url",
	KindString: "string", KindTime: "time", KindLine: "line", KindText: "text"}

func (k Kind) String() string { return kindNames[k] }

// Role says who may change a setting.
type Role int

// The roles.
const (
	// RoleStartup: only the environment sets it, when Seed seeds a queue.
	RoleStartup Role = iota + 1
	// RoleOperator: an operator changes it live too (PATCH
	// /admin/v1/queues/{queue}, the back office).
	RoleOperator
)

func (r Role) String() string {
	if r == RoleOperator {
		return "operator"
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
	Role     Role
	Seed     SeedMode
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
	{Name: "refill_size", Hash: "refill_size", Env: "WAITROOM_REFILL_SIZE", Default: "10", Kind: KindInt, Min: 1, Max: MaxRefillSize, Role: RoleOperator, Seed: SeedAlways,
		Doc:  "Users admitted per interval.",
		Form: FormLine, Label: "New refill size", Hint: "(1 – 100,000 per tick)"},
	{Name: "refill_interval_ms", Hash: "refill_interval_ms", Env: "WAITROOM_REFILL_INTERVAL", Default: "5s", Kind: KindMillis, Min: 1, Max: Unbounded, Role: RoleStartup, Seed: SeedAlways,
		Doc: "Time between ticks (WAITROOM_REFILL_INTERVAL)."},
	{Name: "session_ttl_ms", Hash: "session_ttl_ms", Env: "WAITROOM_SESSION_TTL", Default: "10m", Kind: KindMillis, Min: 1, Max: Unbounded, Role: RoleStartup, Seed: SeedAlways,
		Doc: "How long an admission stays valid (WAITROOM_SESSION_TTL)."},
	{Name: "max_active", Hash: "max_active", Env: "WAITROOM_MAX_ACTIVE", Default: "0", Kind: KindInt, Min: 0, Max: MaxMaxActive, Role: RoleOperator, Seed: SeedAlways,
		Doc:  "Cap of admissions that have not ended (0 - none).",
		Form: FormLine, Label: "Max active users", Hint: "(0 = no cap; up to 10,000,000)"},
	{Name: "max_waiting", Hash: "max_waiting", Kind: KindInt, Min: 0, Max: MaxMaxWaiting, Role: RoleOperator,
		Doc:  "The line's cap (0 - none); beyond it a newcomer's enter answers 503 `queue_full`.",
		Form: FormLine, Label: "Max people waiting", Hint: "(0 = no cap; up to 100,000,000)"},
	{Name: "challenge_difficulty", Hash: "challenge_difficulty", Kind: KindInt, Min: 0, Max: MaxChallengeDifficulty, Role: RoleOperator,
		Doc:  "The proof of work asked before entering, in leading zero bits (0 - none).",
		Form: FormLine, Label: "Proof of work (difficulty)", Hint: "(0 = off; up to 32; 16 ≈ 1 s for a person on this machine, each +1 doubles it)"},
	{Name: "abandon_after_ms", Hash: "abandon_after_ms", Env: "WAITROOM_ABANDON_AFTER", Default: "2m", Kind: KindMillis, Min: 0, Max: MaxAbandonAfter.Milliseconds(), Role: RoleOperator, Seed: SeedAlways,
		Doc:  "How long a waiting place may go unheard before the tick drops it when the line reaches it (0 - never).",
		Form: FormLine, Label: "Drop places unheard for (s)", Hint: "(0 = never; up to 86,400)", Scale: 1000},
	{Name: "paused", Hash: "paused", Kind: KindBool, Role: RoleOperator,
		Doc: "Paused, nobody is admitted and everyone waiting keeps their place."},
	{Name: "opens_at", Hash: "opens_at_ms", Kind: KindTime, Role: RoleOperator,
		Doc: "A scheduled opening; null or \"\" for none."},
	{Name: "prequeue_from", Hash: "prequeue_from_ms", Kind: KindTime, Role: RoleOperator,
		Doc: "When the pre-queue window before opens_at begins; null or \"\" for none."},
	{Name: "webhook_url", Hash: "webhook_url", Kind: KindString, Max: MaxWebhookURLBytes, Role: RoleOperator, Private: true,
		Doc: "Where this queue's events go (docs/WEBHOOKS.md), instead of WAITROOM_WEBHOOK_URL; null or \"\" for that default. " +
			"An absolute https URL (plain http only to a loopback host, or with WAITROOM_WEBHOOK_INSECURE_HTTP). " +
			"Takes effect within 5 s; the audit log keeps its host only."},
	{Name: "title", Hash: "title", Kind: KindLine, Max: MaxTitleRunes, Role: RoleOperator,
		Doc: "The queue's title on its waiting page, by language; replaces every language's; null or {} for none. Set as text, never markup."},
	{Name: "message", Hash: "message", Kind: KindText, Max: MaxMessageRunes, Role: RoleOperator,
		Doc: "The queue's message on its waiting page, by language, the same way; it may break lines."},
	{Name: "adapt_enabled", Hash: "adapt_enabled", Env: "WAITROOM_ADAPT_ENABLED", Default: "false", Kind: KindBool, Role: RoleOperator, Seed: SeedIfSet,
		Doc: "The order page's health drives the rate (docs/ARCHITECTURE.md, \"The order page's health drives the rate\"). " +
			"Off, `refill_size` is what each interval admits again at once."},
	{Name: "origin_target_p95_ms", Hash: "origin_target_p95_ms", Env: "WAITROOM_ORIGIN_TARGET_P95", Default: "0s", Kind: KindMillis, Min: 0, Max: MaxOriginTargetP95.Milliseconds(), Role: RoleOperator, Seed: SeedIfSet,
		Doc:  "Over this p95 of the order page's answers the effective refill drops (0 - not checked).",
		Form: FormAdapt, Label: "Target p95 of the order page (ms)", Hint: "(0 = not checked; up to 600,000)"},
	{Name: "origin_max_error_rate", Hash: "origin_max_error_rate", Env: "WAITROOM_ORIGIN_MAX_ERROR_RATE", Default: "0", Kind: KindRate, Role: RoleOperator, Seed: SeedIfSet,
		Doc:  "Over this share of error answers (5xx, none) the effective refill drops (0 - not checked).",
		Form: FormAdapt, Label: "Max error rate (%)", Hint: "(0 = not checked; up to 100)", Scale: 0.01},
	{Name: "min_refill_size", Hash: "min_refill_size", Env: "WAITROOM_MIN_REFILL_SIZE", Default: "0", Kind: KindInt, Min: 0, Max: MaxRefillSize, Role: RoleOperator, Seed: SeedIfSet,
		Doc:  "The floor of the effective refill (never below 1, nor above `refill_size`).",
		Form: FormAdapt, Label: "Floor (least per tick)", Hint: "(0 – 100,000)"},
	{Name: "origin_probe_url", Hash: "origin_probe_url", Env: "WAITROOM_ORIGIN_PROBE_URL", Default: "", Kind: KindURL, Max: MaxProbeURLBytes, Role: RoleOperator, Seed: SeedIfSet,
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

// OperatorSettings are the names an operator may change, in Catalog order.
func OperatorSettings() []string {
	var names []string
	for _, st := range Catalog {
		if st.Role == RoleOperator {
			names = append(names, st.Name)
		}
	}
	return names
}

// The fields tagged `setting:"<Name>"` of Settings (nested structs
// included) and of Update, by Name.
var (
	settingsFields = taggedFields(reflect.TypeFor[Settings]())
	updateFields   = taggedFields(reflect.TypeFor[Update]())
)

func taggedFields(t reflect.Type) map[string][]int {
	m := map[string][]int{}
	for _, f := range reflect.VisibleFields(t) {
		if name := f.Tag.Get("setting"); name != "" {
			m[name] = f.Index
		}
		if f.Type.Kind() == reflect.Struct && !f.Anonymous && f.Type != reflect.TypeFor[time.Time]() {
			for name, idx := range taggedFields(f.Type) {
				m[name] = append(append([]int{}, f.Index...), idx...)
			}
		}
	}
	return m
}

// Of is the setting's value in s; false when Settings has no such field.
func (st Setting) Of(s Settings) (any, bool) {
	idx, ok := settingsFields[st.Name]
	if !ok {
		return nil, false
	}
	return reflect.ValueOf(s).FieldByIndex(idx).Interface(), true
}

// SetIn sets the setting's value in s (of its Kind's Go type); false when
// Settings has no such field.
func (st Setting) SetIn(s *Settings, v any) bool {
	idx, ok := settingsFields[st.Name]
	if ok {
		reflect.ValueOf(s).Elem().FieldByIndex(idx).Set(reflect.ValueOf(v))
	}
	return ok
}

// Get is the value of the setting named name in u; false when unset.
func (u Update) Get(name string) (any, bool) {
	idx, ok := updateFields[name]
	if !ok {
		return nil, false
	}
	f := reflect.ValueOf(u).FieldByIndex(idx)
	if f.IsNil() {
		return nil, false
	}
	return f.Elem().Interface(), true
}

// Set sets the setting named name in u to v, of its Kind's Go type.
func (u *Update) Set(name string, v any) {
	f := reflect.ValueOf(u).Elem().FieldByIndex(updateFields[name])
	p := reflect.New(f.Type().Elem())
	p.Elem().Set(reflect.ValueOf(v))
	f.Set(p)
}

// Check reports whether v, of the setting's Kind's Go type, is in range.
func (st Setting) Check(v any) error {
	switch x := v.(type) {
	case int:
		return st.checkNumber(int64(x))
	case time.Duration:
		lo, hi := time.Duration(st.Min)*time.Millisecond, time.Duration(math.MaxInt64)
		if st.Max != Unbounded {
			hi = time.Duration(st.Max) * time.Millisecond
		}
		if x < lo || x > hi {
			return st.rangeError()
		}
	case float64:
		if !(x >= 0 && x <= 1) { // NaN fails too
			return fieldError(st.Name, "must be a number from 0 to 1")
		}
	case string:
		return st.checkString(x)
	case map[string]string:
		if !checkText(x, int(st.Max), st.Kind == KindText) {
			return st.textError()
		}
	}
	return nil
}

func (st Setting) checkNumber(n int64) error {
	if n < st.Min || n > st.Max {
		return st.rangeError()
	}
	return nil
}

func (st Setting) rangeError() *FieldError {
	if st.Max == Unbounded {
		return fieldError(st.Name, "must be an integer of at least %d", st.Min)
	}
	return fieldError(st.Name, "must be an integer from %d to %d", st.Min, st.Max)
}

func (st Setting) checkString(s string) error {
	switch {
	case s == "":
		return nil
	case st.Kind == KindURL:
		return CheckProbeURL(s)
	case int64(len(s)) > st.Max:
		return fieldError(st.Name, "must be at most %d bytes", st.Max)
	}
	return nil
}

func (st Setting) textError() *FieldError {
	if st.Kind == KindText {
		return fieldError(st.Name, "must be, per language tag, at most %d characters, without control (but line breaks) or direction-override characters", st.Max)
	}
	return fieldError(st.Name, "must be, per language tag, at most %d characters of one line, without control or direction-override characters", st.Max)
}

// Decode reads the setting from a PATCH body's field, and checks it. A
// string or text reads null as none; the caller checks what only it
// knows (a URL's target, the languages).
func (st Setting) Decode(raw json.RawMessage) (any, error) {
	null := strings.TrimSpace(string(raw)) == "null"
	switch st.Kind {
	case KindInt, KindMillis:
		var n int
		if json.Unmarshal(raw, &n) != nil || null || st.checkNumber(int64(n)) != nil {
			return nil, st.rangeError()
		}
		if st.Kind == KindMillis {
			return time.Duration(n) * time.Millisecond, nil
		}
		return n, nil
	case KindBool:
		var b bool
		if json.Unmarshal(raw, &b) != nil || null {
			return nil, fieldError(st.Name, "must be true or false")
		}
		return b, nil
	case KindRate:
		var f float64
		if json.Unmarshal(raw, &f) != nil || null || st.Check(f) != nil {
			return nil, fieldError(st.Name, "must be a number from 0 to 1")
		}
		return f, nil
	case KindTime:
		return st.decodeTime(raw)
	case KindURL, KindString:
		var s *string
		if json.Unmarshal(raw, &s) != nil {
			return nil, fieldError(st.Name, "must be a string, or null or \"\" for none")
		}
		if s == nil {
			return "", nil
		}
		if err := st.Check(*s); err != nil {
			return nil, err
		}
		return *s, nil
	default: // texts
		var m map[string]string
		if json.Unmarshal(raw, &m) != nil {
			return nil, fieldError(st.Name, "must be an object of texts by language, or null")
		}
		if m == nil {
			m = map[string]string{}
		}
		return m, nil
	}
}

// decodeTime reads an RFC 3339 time, or null (or "") for none.
func (st Setting) decodeTime(raw json.RawMessage) (any, error) {
	var s *string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fieldError(st.Name, "must be an RFC 3339 time or null")
	}
	var t time.Time
	if s != nil && *s != "" {
		var err error
		if t, err = time.Parse(time.RFC3339, *s); err != nil {
			return nil, fieldError(st.Name, "must be an RFC 3339 time (2026-12-24T09:00:00+09:00) or null")
		}
	}
	return t, nil
}

// encode is a value as its config HASH field holds it.
func (st Setting) encode(v any) string {
	switch x := v.(type) {
	case int:
		return strconv.Itoa(x)
	case time.Duration:
		return strconv.FormatInt(x.Milliseconds(), 10)
	case bool:
		return strconv.Itoa(boolInt(x))
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case string:
		return x
	case time.Time:
		return strconv.FormatInt(unixMilliOrZero(x), 10)
	case map[string]string:
		return encodeText(x)
	}
	panic(fmt.Sprintf("queue: setting %s: no encoding for %T", st.Name, v))
}

// show is a HASH field's value as the start-up warning shows it: a
// duration as one, a switch as true or false.
func (st Setting) show(stored string) string {
	switch st.Kind {
	case KindMillis:
		n, _ := strconv.ParseInt(stored, 10, 64)
		return (time.Duration(n) * time.Millisecond).String()
	case KindBool:
		return strconv.FormatBool(stored == "1")
	}
	return stored
}

// label is the setting's name in the start-up warning: a duration's
// without its unit ("refill_interval=5s").
func (st Setting) label() string {
	if st.Kind == KindMillis {
		return strings.TrimSuffix(st.Name, "_ms")
	}
	return st.Name
}

// isZero reports whether v is its type's zero (SeedIfSet).
func isZero(v any) bool { return reflect.ValueOf(v).IsZero() }

// errNoSetting is a PATCH field that names no setting an operator changes.
var errNoSetting = errors.New("is not a setting")

// NotASetting is the error for a PATCH field named name that is no
// setting an operator may change; it lists those that are.
func NotASetting(name string) error {
	return &FieldError{Field: name, Err: fmt.Errorf("%w; settings: %s", errNoSetting, strings.Join(OperatorSettings(), ", "))}
}

// Values reads every setting of queue from its config HASH in one HMGET,
// by Name, each of its Kind's Go type: a field not stored is the
// replica's default (the environment's), or its Kind's zero. The admin
// view shows them (private ones too: the caller leaves those out).
func (s *Store) Values(ctx context.Context, queue string) (map[string]any, error) {
	q, err := s.queue(queue)
	if err != nil {
		return nil, err
	}
	fields := make([]string, len(Catalog))
	for i, st := range Catalog {
		fields[i] = st.Hash
	}
	stored, err := WaitFor(ctx, s.timeout, func(ctx context.Context) ([]any, error) {
		return s.rdb.HMGet(ctx, q.keys.config, fields...).Result()
	})
	if err != nil {
		return nil, fmt.Errorf("queue: settings: %w", err)
	}
	values := make(map[string]any, len(Catalog))
	for i, st := range Catalog {
		raw, ok := stored[i].(string)
		def, hasDef := st.Of(s.defaults)
		switch {
		case ok:
			values[st.Name] = st.decode(raw)
		case hasDef:
			values[st.Name] = def
		default:
			values[st.Name] = st.decode("")
		}
	}
	return values, nil
}

// decode is a config HASH field's value (encode's), of the Kind's Go
// type; "" or a value unreadable is the Kind's zero (texts: {}).
func (st Setting) decode(stored string) any {
	switch st.Kind {
	case KindInt:
		n, _ := strconv.Atoi(stored)
		return n
	case KindMillis:
		n, _ := strconv.ParseInt(stored, 10, 64)
		return time.Duration(n) * time.Millisecond
	case KindBool:
		return stored == "1"
	case KindRate:
		f, _ := strconv.ParseFloat(stored, 64)
		return f
	case KindTime:
		if n, _ := strconv.ParseInt(stored, 10, 64); n > 0 {
			return time.UnixMilli(n)
		}
		return time.Time{}
	case KindLine, KindText:
		return textField(stored)
	}
	return stored
}
