package queue

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"
)

// TestCatalogMatchesTheTypes: every row names an Update field (an
// operator's setting) or a Settings field (the environment's), of its
// Kind's Go type, and every tagged field has a row.
func TestCatalogMatchesTheTypes(t *testing.T) {
	goType := map[Kind]reflect.Type{
		KindInt: reflect.TypeFor[int](), KindMillis: reflect.TypeFor[time.Duration](), KindBool: reflect.TypeFor[bool](),
		KindRate: reflect.TypeFor[float64](), KindURL: reflect.TypeFor[string](), KindString: reflect.TypeFor[string](),
		KindTime: reflect.TypeFor[time.Time](), KindLine: reflect.TypeFor[map[string]string](), KindText: reflect.TypeFor[map[string]string](),
		KindLanes: reflect.TypeFor[Lanes](),
	}
	names := map[string]bool{}
	for _, st := range Catalog {
		if names[st.Name] || st.Hash == "" {
			t.Errorf("%s: named twice, or no HASH field", st.Name)
		}
		names[st.Name] = true
		want := goType[st.Kind]
		if idx, ok := updateFields[st.Name]; ok != st.Role.Live() {
			t.Errorf("%s: an Update field %v, role %d", st.Name, ok, st.Role)
		} else if ok && reflect.TypeFor[Update]().FieldByIndex(idx).Type.Elem() != want {
			t.Errorf("%s: Update's field is not a *%v", st.Name, want)
		}
		if idx, ok := settingsFields[st.Name]; ok && reflect.TypeFor[Settings]().FieldByIndex(idx).Type != want {
			t.Errorf("%s: Settings' field is not a %v", st.Name, want)
		} else if !ok && (st.Env != "" || st.Seed != SeedNever) {
			t.Errorf("%s: the environment sets it, but Settings has no field", st.Name)
		}
	}
	for name := range updateFields {
		if !names[name] {
			t.Errorf("Update's field %s has no row in Catalog", name)
		}
	}
	for name := range settingsFields {
		if !names[name] {
			t.Errorf("Settings' field %s has no row in Catalog", name)
		}
	}
}

// TestUpdateSetGet: what Set puts in an Update, Get and Validate read.
func TestUpdateSetGet(t *testing.T) {
	var u Update
	u.Set("max_waiting", 7)
	u.Set("abandon_after_ms", time.Minute)
	if v, ok := u.Get("max_waiting"); !ok || v != 7 || *u.MaxWaiting != 7 || *u.AbandonAfter != time.Minute {
		t.Fatalf("Get = %v %v; update %+v", v, ok, u)
	}
	if _, ok := u.Get("paused"); ok {
		t.Fatal("paused is set, never having been")
	}
	u.Set("challenge_difficulty", MaxChallengeDifficulty+1)
	var fe *FieldError
	if err := u.Validate(); !errors.As(err, &fe) || fe.Field != "challenge_difficulty" ||
		err.Error() != "queue: challenge_difficulty must be an integer from 0 to 32" {
		t.Fatalf("Validate = %v", err)
	}
}

// TestDecode reads PATCH fields the way the API documents them.
func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		name, raw string
		want      any
		err       string
	}{
		{"max_waiting", `12`, 12, ""},
		{"max_waiting", `-1`, nil, "queue: max_waiting must be an integer from 0 to 100000000"},
		{"max_waiting", `null`, nil, "queue: max_waiting must be an integer from 0 to 100000000"},
		{"abandon_after_ms", `1500`, 1500 * time.Millisecond, ""},
		{"paused", `true`, true, ""},
		{"paused", `1`, nil, "queue: paused must be true or false"},
		{"origin_max_error_rate", `0.25`, 0.25, ""},
		{"origin_max_error_rate", `2`, nil, "queue: origin_max_error_rate must be a number from 0 to 1"},
		{"opens_at", `null`, time.Time{}, ""},
		{"opens_at", `"soon"`, nil, "queue: opens_at must be an RFC 3339 time (2026-12-24T09:00:00+09:00) or null"},
		{"origin_probe_url", `null`, "", ""},
	} {
		st, _ := Lookup(tc.name)
		v, err := st.Decode(json.RawMessage(tc.raw))
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%s %s: %v, want %q", tc.name, tc.raw, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(v, tc.want) {
			t.Errorf("%s %s: %v %v, want %v", tc.name, tc.raw, v, err, tc.want)
		}
	}
}

// TestEnvDiff: a replica started with other settings than those stored
// names every one that differs, the automatic rate's included, and none
// the environment decides (not stored).
func TestEnvDiff(t *testing.T) {
	ctx := context.Background()
	first := Settings{RefillSize: 10, RefillInterval: 5 * time.Second, SessionTTL: time.Minute,
		Adapt: Adapt{Enabled: true, TargetP95: 800 * time.Millisecond}}
	s, q, rdb := newStore(t, first)
	if err := NewInspector(s).Seed(ctx); err != nil {
		t.Fatal(err)
	}
	if d, err := NewInspector(s).EnvDiff(ctx, q); err != nil || len(d) != 0 {
		t.Fatalf("just seeded: %v %v", d, err)
	}
	if err := NewInspector(s).UpdateSettings(ctx, q, Update{OriginMaxErrorRate: ptr(0.1)}); err != nil {
		t.Fatal(err)
	}
	later := first
	later.RefillInterval = 20 * time.Second
	// Switched off and the error rate not set (zero: nothing to warn of,
	// though stored), another target, a floor that was never stored.
	later.Adapt = Adapt{TargetP95: 500 * time.Millisecond, MinRefill: 3}
	s2, err := NewStore(rdb, []string{q}, later, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := NewInspector(s2).Seed(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := NewInspector(s2).EnvDiff(ctx, q)
	want := []string{"refill_interval=5s (env: 20s)", "origin_target_p95=800ms (env: 500ms)"}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("EnvDiff = %q %v\nwant %q", got, err, want)
	}
}

// TestQueueConfig: queue_config (common_config.lua) gives every setting of
// Catalog marked Lua by its HASH field, a number unless its kind is text:
// while not stored the replica's default (SeedAlways) or the kind's zero,
// once stored the value stored; and the interval's budget.
func TestQueueConfig(t *testing.T) {
	ctx := context.Background()
	defaults := Settings{RefillSize: 7, RefillInterval: 3 * time.Second, SessionTTL: time.Minute, MaxActive: 9, AbandonAfter: 4 * time.Second}
	s, q, rdb := newStore(t, defaults)
	ref := s.queues[q]
	read := func() map[string]any {
		t.Helper()
		raw, err := runLua(ctx, rdb, commonLua, "return cjson.encode(queue_config(KEYS[1]))", []string{ref.keys.config}, ref.args...).Text()
		if err != nil {
			t.Fatal(err)
		}
		var cfg map[string]any
		if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	// as is a HASH value as queue_config gives it.
	as := func(st Setting, v string) any {
		if !st.Kind.number() {
			return v
		}
		n, _ := strconv.ParseFloat(v, 64)
		return n
	}
	word := regexp.MustCompile(`^[a-z][a-z0-9_]*$`) // a Lua name, and a literal configLua need not escape
	unset, set := map[string]any{"budget": 7.0}, map[string]any{"budget": 3.0}
	var fields []any
	for _, st := range Catalog {
		if !st.Lua {
			continue
		}
		if !word.MatchString(st.Hash) || len(st.Choices) > 0 && !word.MatchString(st.Choices[0]) {
			t.Errorf("%s: its HASH field or first choice is not a plain word", st.Name)
		}
		v, ok := st.Of(defaults)
		switch {
		case st.Seed == SeedAlways && ok:
			unset[st.Hash] = as(st, st.encode(v))
		case len(st.Choices) > 0:
			unset[st.Hash] = st.Choices[0]
		default:
			unset[st.Hash] = as(st, "")
		}
		stored := "3"
		if !st.Kind.number() {
			stored = "x"
		}
		fields = append(fields, st.Hash, stored)
		set[st.Hash] = as(st, stored)
	}
	if unset["refill_interval_ms"] != 3000.0 || unset["max_waiting"] != 0.0 || unset["human_check"] != HumanOff {
		t.Fatalf("the defaults expected are wrong: %v", unset)
	}
	if got := read(); !reflect.DeepEqual(got, unset) {
		t.Errorf("not stored, queue_config gives\n  %v\nwant\n  %v", got, unset)
	}
	if err := rdb.HSet(ctx, ref.keys.config, fields...).Err(); err != nil {
		t.Fatal(err)
	}
	if got := read(); !reflect.DeepEqual(got, set) {
		t.Errorf("stored, queue_config gives\n  %v\nwant\n  %v", got, set)
	}
}
