package queue

// A setting's value: where it lives in Settings and Update (the field
// tagged `setting:"<Name>"`), its range check, how a PATCH body's field
// decodes into it, and how it is stored in the config HASH and shown.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

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
	case Lanes:
		return x.Validate()
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
	case len(st.Choices) > 0 && !slices.Contains(st.Choices, s):
		return fieldError(st.Name, "must be one of %s", strings.Join(st.Choices, ", "))
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
	case KindLanes:
		ls, err := ParseLanes(string(raw))
		if err != nil {
			return nil, err
		}
		return ls, nil
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
	case Lanes:
		return x.encode()
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
func (in *Inspector) Values(ctx context.Context, queue string) (map[string]any, error) {
	s := in.s
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
	case KindLanes:
		ls, _ := ParseLanes(stored)
		if ls == nil {
			ls = Lanes{}
		}
		return ls
	}
	return stored
}
