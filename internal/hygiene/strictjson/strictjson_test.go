package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// sample has a field of each kind the service's bodies use, and a few
// more, so the tests and the fuzz target cover the type-guided paths.
type sample struct {
	ID    *string           `json:"user_id"`
	Token string            `json:"join_token,omitempty"`
	N     *int              `json:"refill_size"`
	List  []inner           `json:"list"`
	Map   map[string]inner  `json:"map"`
	Raw   json.RawMessage   `json:"raw"`
	Any   any               `json:"any"`
	When  *time.Time        `json:"when"`
	Bytes []byte            `json:"bytes"`
	Skip  string            `json:"-"`
	Plain map[string]string `json:"plain"`
	Embedded
}

type inner struct {
	X    float64 `json:"x"`
	Y    bool    // no tag: the key is "Y"
	Next *inner  `json:"next"`
}

type Embedded struct {
	E int `json:"e"`
}

func TestAccepts(t *testing.T) {
	for _, body := range []string{
		`{}`,
		` {"user_id":"user-1"} `,
		`{"user_id":"김철수"}`,
		`{"user_id":"\u00e9\n\"\\\/\b\f\r\t"}`,
		`{"user_id":"\ud83d\ude00"}`, // a pair: 😀
		`{"user_id":"\uD83D\uDE00"}`,
		`{"user_id":"\uffff\u0000"}`,
		`{"user_id":null,"join_token":"j","refill_size":-125,"list":[{"x":-12.5e+3}]}`,
		`{"list":[{"x":1,"Y":true,"next":{"x":0}},{}],"e":1}`,
		`{"map":{"a":{"x":1},"A":{"x":2}}}`, // map keys are data: case counts, both kept
		`{"raw":{"USER_ID":1,"a":[1,"x"]},"any":{"Q":[null]}}`,
		`{"when":"2026-01-02T03:04:05Z","bytes":"aGk="}`,
		`{"plain":{"a":"1","b":"2"}}`,
		`{"user_id":"\u002f"}`,
	} {
		var v sample
		if err := Unmarshal([]byte(body), &v); err != nil {
			t.Errorf("Unmarshal(%s): %v", body, err)
		}
	}
}

func TestRefuses(t *testing.T) {
	for _, tc := range []struct{ name, body, reason string }{
		{"invalid UTF-8", "{\"user_id\":\"a\xffb\"}", "invalid UTF-8"},
		{"truncated UTF-8", "{\"user_id\":\"\xc3\"}", "invalid UTF-8"},
		{"UTF-8 of a surrogate", "{\"user_id\":\"\xed\xa0\x80\"}", "invalid UTF-8"},
		{"overlong UTF-8", "{\"user_id\":\"\xc0\xaf\"}", "invalid UTF-8"},
		{"invalid UTF-8 in a key", "{\"user_id\xff\":\"a\"}", "invalid UTF-8"},
		{"invalid UTF-8 in a raw value", "{\"raw\":[\"\xff\"]}", "invalid UTF-8"},
		{"lone high surrogate", `{"user_id":"\ud800"}`, "lone surrogate"},
		{"lone low surrogate", `{"user_id":"\udc00"}`, "lone surrogate"},
		{"high then not low", `{"user_id":"\ud800\u0041"}`, "lone surrogate"},
		{"two highs", `{"user_id":"\ud800\ud800"}`, "lone surrogate"},
		{"low then high", `{"user_id":"\udc00\ud800"}`, "lone surrogate"},
		{"high at the end", `{"user_id":"a\uD800"}`, "lone surrogate"},
		{"lone surrogate in an any", `{"any":["\udfff"]}`, "lone surrogate"},
		{"duplicate key", `{"user_id":"a","user_id":"b"}`, "duplicate key"},
		{"duplicate key, escaped", `{"user_id":"a","user\u005fid":"b"}`, "duplicate key"},
		{"duplicate map key", `{"plain":{"a":"1","a":"2"}}`, "duplicate key"},
		{"duplicate key deep in raw", `{"raw":{"x":[{"k":1,"k":2}]}}`, "duplicate key"},
		{"duplicate key in a large object", `{"plain":{` + manyKeys(40) + `,"k7":"again"}}`, "duplicate key"},
		{"case-folded key", `{"USER_ID":"a"}`, `unknown field "USER_ID"`},
		{"case-folded nested key", `{"list":[{"X":1}]}`, `unknown field "X"`},
		{"untagged field in another case", `{"list":[{"y":true}]}`, `unknown field "y"`},
		{"Go name of a tagged field", `{"ID":"a"}`, `unknown field "ID"`},
		{"skipped field", `{"Skip":"a"}`, `unknown field "Skip"`},
		{"unknown field", `{"user":"a"}`, `unknown field "user"`},
		{"Kelvin sign folding", `{"join_to\u212aen":"a"}`, "unknown field"},
		{"two values", `{}{}`, "data after"},
		{"trailing garbage", `{"user_id":"a"}x`, "data after"},
		{"trailing comma", `{"user_id":"a",}`, "expected a string key"},
		{"control byte", "{\"user_id\":\"a\x01\"}", "control character"},
		{"bad escape", `{"user_id":"\x41"}`, "invalid escape"},
		{"short \\u", `{"user_id":"\u12"}`, "invalid \\u escape"},
		{"leading zero", `{"refill_size":01}`, "expected ','"},
		{"bare minus", `{"refill_size":-}`, "invalid number"},
		{"empty", ``, "unexpected end"},
		{"unterminated", `{"user_id":"a`, "unexpected end"},
		{"vertical tab", "\v{}", "invalid character"},
		{"deep", strings.Repeat("[", maxDepth+1), "nested too deep"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v sample
			err := Unmarshal([]byte(tc.body), &v)
			var se *Error
			if !errors.As(err, &se) || !strings.Contains(se.Reason, tc.reason) {
				t.Fatalf("Unmarshal(%q) = %v; want a refusal for %q", tc.body, err, tc.reason)
			}
		})
	}
}

func manyKeys(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"k` + string(rune('0'+i/10)) + string(rune('0'+i%10)) + `":"v"`)
	}
	return strings.ReplaceAll(b.String(), `"k07"`, `"k7"`)
}

// What passes the check is still decoded by encoding/json, which refuses
// wrong types itself.
func TestTypesAreEncodingJSONs(t *testing.T) {
	var v sample
	err := Unmarshal([]byte(`{"refill_size":"ten"}`), &v)
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		t.Fatalf("a string for an int: %v", err)
	}
	if err := Unmarshal([]byte(`{}`), v); err == nil {
		t.Fatal("a non-pointer target was accepted")
	}
}

// FuzzStrict checks, for any input, that what Unmarshal accepts
// encoding/json accepts with the same value, and that everything it
// refuses but encoding/json accepts has a reason this package names:
// invalid UTF-8, a \u escape of a surrogate, a duplicate key, or a key
// that is no struct field exactly.
func FuzzStrict(f *testing.F) {
	for _, s := range []string{
		`{"user_id":"user-1"}`, `{}`, `{"USER_ID":"a"}`, `{"user_id":"a","user_id":"b"}`,
		`{"user_id":"\ud800"}`, "{\"user_id\":\"\xff\"}", `{"user_id":"\ud83d\ude00"}`,
		`{"list":[{"x":1,"Y":true,"next":{"x":0,"y":1}}],"e":2}`, `{"map":{"a":{"X":1}}}`,
		`{"raw":{"a":1,"a":2}}`, `{"any":[1,"\u00e9",{"k":null}]}`, `{"plain":{"a":"\uDBFF\uDFFF"}}`,
		`{"refill_size":-0.5E-3}`, `{"user\u005fid":"x"}`, `{"when":"2026-01-02T03:04:05Z"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var strict sample
		strictErr := Unmarshal(data, &strict)
		var loose sample
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		looseErr := dec.Decode(&loose)
		if looseErr == nil {
			if _, err := dec.Token(); err != io.EOF {
				looseErr = errors.New("data after the value")
			}
		}
		if strictErr == nil {
			if looseErr != nil {
				t.Fatalf("%q: strict accepts, encoding/json refuses: %v", data, looseErr)
			}
			if !reflect.DeepEqual(strict, loose) {
				t.Fatalf("%q: strict %+v, encoding/json %+v", data, strict, loose)
			}
			return
		}
		var se *Error
		if !errors.As(strictErr, &se) {
			return // encoding/json's own refusal (a type)
		}
		if looseErr != nil {
			return
		}
		if !utf8.Valid(data) || hasSurrogateEscape(data) {
			return
		}
		if dup, notField := keyTrouble(t, data); dup || notField {
			return
		}
		t.Fatalf("%q: strict refuses (%v) with no reason", data, strictErr)
	})
}

// hasSurrogateEscape reports whether data has a \u escape of a surrogate,
// paired or not (a loose check, for the fuzz target's explanations).
func hasSurrogateEscape(data []byte) bool {
	s := strings.ToLower(string(data))
	for _, p := range []string{`\ud8`, `\ud9`, `\uda`, `\udb`, `\udc`, `\udd`, `\ude`, `\udf`} {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

// keyTrouble walks data with encoding/json's tokens: dup is a key twice in
// one object; notField a key of a sample or inner object that is not
// exactly one of its fields' names.
func keyTrouble(t *testing.T, data []byte) (dup, notField bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	sampleFields := map[string]string{"user_id": "", "join_token": "", "refill_size": "", "list": "inner[]", "map": "inner{}",
		"raw": "", "any": "", "when": "", "bytes": "", "plain": "", "e": ""}
	innerFields := map[string]string{"x": "", "Y": "", "next": "inner"}
	kinds := map[string]map[string]string{"inner": innerFields}
	// value reads one value of kind: "sample" or "inner" (a struct), a
	// map of them ("inner{}"), a slice ("inner[]"), or "" (anything).
	var value func(kind string)
	value = func(kind string) {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("%q: tokens: %v", data, err)
		}
		d, ok := tok.(json.Delim)
		if !ok {
			return
		}
		switch d {
		case '[':
			for dec.More() {
				value(strings.TrimSuffix(kind, "[]"))
			}
			dec.Token()
		case '{':
			seen := map[string]bool{}
			fields := kinds[kind]
			for dec.More() {
				k, _ := dec.Token()
				key := k.(string)
				if seen[key] {
					dup = true
				}
				seen[key] = true
				next := ""
				switch {
				case fields != nil:
					f, ok := fields[key]
					if !ok {
						notField = true
					}
					next = f
				case strings.HasSuffix(kind, "{}"):
					next = strings.TrimSuffix(kind, "{}")
				}
				value(next)
			}
			dec.Token()
		}
	}
	kinds["sample"] = sampleFields
	value("sample")
	return dup, notField
}

// BenchmarkCheck: the check alone, on an enter body that misses the
// service's fast path, against a walk of encoding/json's tokens (the
// other way to find duplicate keys) and against decoding itself.
func BenchmarkCheck(b *testing.B) {
	body := []byte(`{"join_token":"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c2VyLTEyMyIsInF1ZXVlIjoiZGVmYXVsdCIsImV4cCI6MTc2NTAwMDAwMH0.c2lnbmF0dXJl"}`)
	typ := reflect.TypeFor[sample]()
	b.Run("check", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := Check(body, typ); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("tokens", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			dec := json.NewDecoder(bytes.NewReader(body))
			for {
				if _, err := dec.Token(); err != nil {
					break
				}
			}
		}
	})
	b.Run("unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var v sample
			if err := Unmarshal(body, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var v sample
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
