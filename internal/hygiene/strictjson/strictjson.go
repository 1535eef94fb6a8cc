// Package strictjson decodes JSON as encoding/json does, after a check
// that refuses what encoding/json lets through silently:
//
//   - invalid UTF-8 in a string, and a \u escape of a lone surrogate
//     ("\ud800"), which encoding/json turns into U+FFFD, so that two
//     different inputs decode to one value;
//   - a key given twice in one object, where encoding/json keeps the last
//     and a proxy in front may read the first;
//   - a key that names a struct field only when case is ignored
//     ("USER_ID" for user_id), which encoding/json accepts;
//   - any key that is not a field of the struct it is decoded into.
//
// The check is one pass over the bytes, guided by the target's type, that
// allocates only for keys written with escapes; the decoding itself is
// encoding/json's.
package strictjson

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// Error is why a document was refused, at a byte offset.
type Error struct {
	Offset int    // of the byte at fault in the input
	Reason string // e.g. "duplicate key \"a\""
}

func (e *Error) Error() string {
	return fmt.Sprintf("strictjson: %s at offset %d", e.Reason, e.Offset)
}

// maxDepth bounds nesting, as encoding/json does, so a document of
// brackets cannot grow the stack without end.
const maxDepth = 10000

// Unmarshal decodes data, exactly one JSON value with optional whitespace
// around it, into v, a non-nil pointer, once Check passes.
func Unmarshal(data []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return &json.InvalidUnmarshalError{Type: reflect.TypeOf(v)}
	}
	if err := Check(data, rv.Type().Elem()); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// Check reports whether data is one JSON value that decoding into a t
// should accept under this package's rules (see the package comment). It
// does not check that values fit their fields' types: encoding/json does.
func Check(data []byte, t reflect.Type) error {
	s := checker{data: data}
	s.skipSpace()
	if err := s.value(shapeOf(t), 0); err != nil {
		return err
	}
	s.skipSpace()
	if s.i != len(s.data) {
		return s.fail("data after the JSON value")
	}
	return nil
}

// shape is what Check needs to know of a type: which keys its objects may
// have, and the shapes of what they hold.
type shape struct {
	// fields of a struct, by exact JSON name; nil for any other type.
	fields map[string]*shape
	// elem is the shape of a map's values or a slice's or array's
	// elements.
	elem *shape
}

// anyShape accepts any value: interfaces, json.RawMessage, types that
// decode themselves, scalars.
var anyShape = &shape{}

var shapes sync.Map // reflect.Type → *shape

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func shapeOf(t reflect.Type) *shape {
	if s, ok := shapes.Load(t); ok {
		return s.(*shape)
	}
	s := buildShape(t, map[reflect.Type]*shape{})
	shapes.Store(t, s)
	return s
}

// buildShape follows encoding/json's rules for field names: the tag's
// name, else the Go name; "-" skips a field; an untagged embedded struct
// lends its fields. seen ends recursive types.
func buildShape(t reflect.Type, seen map[reflect.Type]*shape) *shape {
	for t.Kind() == reflect.Pointer {
		if t.Implements(jsonUnmarshaler) || t.Implements(textUnmarshaler) {
			return anyShape
		}
		t = t.Elem()
	}
	if s, ok := seen[t]; ok {
		return s
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return anyShape
	}
	switch t.Kind() {
	case reflect.Struct:
		s := &shape{fields: map[string]*shape{}}
		seen[t] = s
		addFields(s, t, seen)
		return s
	case reflect.Map, reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			return anyShape // []byte is a base64 string
		}
		s := &shape{}
		seen[t] = s
		s.elem = buildShape(t.Elem(), seen)
		if s.elem == anyShape {
			return anyShape
		}
		return s
	default:
		return anyShape
	}
}

func addFields(s *shape, t reflect.Type, seen map[reflect.Type]*shape) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				addFields(s, ft, seen)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		s.fields[name] = buildShape(f.Type, seen)
	}
}

// checker walks one document.
type checker struct {
	data []byte
	i    int
	// keys holds the keys of the objects being read, innermost last, for
	// finding duplicates; each object's start in it is on the Go stack.
	keys [][]byte
}

func (s *checker) fail(reason string) error { return &Error{Offset: s.i, Reason: reason} }

func (s *checker) skipSpace() {
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *checker) value(sh *shape, depth int) error {
	if s.i >= len(s.data) {
		return s.fail("unexpected end of JSON")
	}
	switch c := s.data[s.i]; {
	case c == '{':
		return s.object(sh, depth+1)
	case c == '[':
		return s.array(sh, depth+1)
	case c == '"':
		_, err := s.str(false)
		return err
	case c == '-' || c >= '0' && c <= '9':
		return s.number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	default:
		return s.fail(fmt.Sprintf("invalid character %q looking for a value", c))
	}
}

// linearKeys is the size up to which an object's keys are compared pair
// by pair; larger objects use a set, so that 50,000 keys cost 50,000
// look-ups rather than a billion comparisons.
const linearKeys = 16

func (s *checker) object(sh *shape, depth int) error {
	if depth > maxDepth {
		return s.fail("nested too deep")
	}
	s.i++ // {
	s.skipSpace()
	if s.i < len(s.data) && s.data[s.i] == '}' {
		s.i++
		return nil
	}
	start := len(s.keys)
	defer func() { s.keys = s.keys[:start] }()
	var set map[string]struct{}
	for {
		if s.i >= len(s.data) || s.data[s.i] != '"' {
			return s.fail("expected a string key")
		}
		at := s.i
		key, err := s.str(true)
		if err != nil {
			return err
		}
		if set != nil {
			if _, dup := set[string(key)]; dup {
				return &Error{Offset: at, Reason: fmt.Sprintf("duplicate key %q", key)}
			}
			set[string(key)] = struct{}{}
		} else {
			for _, k := range s.keys[start:] {
				if bytes.Equal(k, key) {
					return &Error{Offset: at, Reason: fmt.Sprintf("duplicate key %q", key)}
				}
			}
			s.keys = append(s.keys, key)
			if len(s.keys)-start > linearKeys {
				set = make(map[string]struct{}, 2*linearKeys)
				for _, k := range s.keys[start:] {
					set[string(k)] = struct{}{}
				}
			}
		}
		next := sh.elem
		if sh.fields != nil {
			f, ok := sh.fields[string(key)]
			if !ok {
				return &Error{Offset: at, Reason: fmt.Sprintf("unknown field %q", key)}
			}
			next = f
		}
		if next == nil {
			next = anyShape
		}
		s.skipSpace()
		if s.i >= len(s.data) || s.data[s.i] != ':' {
			return s.fail("expected ':' after a key")
		}
		s.i++
		s.skipSpace()
		if err := s.value(next, depth); err != nil {
			return err
		}
		if done, err := s.afterValue('}'); done || err != nil {
			return err
		}
	}
}

func (s *checker) array(sh *shape, depth int) error {
	if depth > maxDepth {
		return s.fail("nested too deep")
	}
	elem := sh.elem
	if elem == nil {
		elem = anyShape
	}
	s.i++ // [
	s.skipSpace()
	if s.i < len(s.data) && s.data[s.i] == ']' {
		s.i++
		return nil
	}
	for {
		if err := s.value(elem, depth); err != nil {
			return err
		}
		if done, err := s.afterValue(']'); done || err != nil {
			return err
		}
	}
}

// afterValue reads what follows a member of an object or an element of an
// array: a ',' (another comes) or end, the closing '}' or ']' (done).
func (s *checker) afterValue(end byte) (done bool, err error) {
	s.skipSpace()
	if s.i >= len(s.data) {
		return false, s.fail("unexpected end of JSON")
	}
	switch s.data[s.i] {
	case ',':
		s.i++
		s.skipSpace()
		return false, nil
	case end:
		s.i++
		return true, nil
	}
	return false, s.fail("expected ',' or '" + string(rune(end)) + "' after a value")
}

// str reads a string. With want, it returns the string's value: the bytes
// between the quotes when there is no escape (no copy), else a new slice.
func (s *checker) str(want bool) ([]byte, error) {
	s.i++ // "
	start := s.i
	escaped := false
	for s.i < len(s.data) {
		c := s.data[s.i]
		switch {
		case c == '"':
			raw := s.data[start:s.i]
			s.i++
			if want && escaped {
				return unescape(raw), nil
			}
			return raw, nil
		case c == '\\':
			escaped = true
			if err := s.escape(); err != nil {
				return nil, err
			}
		case c < 0x20:
			return nil, s.fail("control character in a string")
		case c < utf8.RuneSelf:
			s.i++
		default:
			r, size := utf8.DecodeRune(s.data[s.i:])
			if r == utf8.RuneError && size == 1 {
				return nil, s.fail("invalid UTF-8 in a string")
			}
			s.i += size
		}
	}
	return nil, s.fail("unexpected end of JSON in a string")
}

// escape reads one escape at s.i (the backslash), refusing a \u escape of
// a surrogate that is not the first half of a pair followed by its second.
func (s *checker) escape() error {
	if s.i+1 >= len(s.data) {
		return s.fail("unexpected end of JSON in a string")
	}
	switch s.data[s.i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		s.i += 2
		return nil
	case 'u':
	default:
		return s.fail("invalid escape in a string")
	}
	r, ok := hex4(s.data[s.i+2:])
	if !ok {
		return s.fail("invalid \\u escape in a string")
	}
	if !utf16.IsSurrogate(r) {
		s.i += 6
		return nil
	}
	// A surrogate: it must be a high one followed by \u and a low one.
	if r < 0xdc00 && s.i+11 < len(s.data) && s.data[s.i+6] == '\\' && s.data[s.i+7] == 'u' {
		if r2, ok := hex4(s.data[s.i+8:]); ok && r2 >= 0xdc00 && r2 <= 0xdfff {
			s.i += 12
			return nil
		}
	}
	return s.fail("lone surrogate in a string")
}

// hex4 reads four hex digits.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// unescape returns the value of a string's raw bytes, already checked.
func unescape(raw []byte) []byte {
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		switch raw[i+1] {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, _ := hex4(raw[i+2:])
			if utf16.IsSurrogate(r) {
				r2, _ := hex4(raw[i+8:])
				r = utf16.DecodeRune(r, r2)
				i += 6
			}
			out = utf8.AppendRune(out, r)
			i += 6
			continue
		default: // " \ /
			out = append(out, raw[i+1])
		}
		i += 2
	}
	return out
}

// number reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *checker) number() error {
	if s.data[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.data) && s.data[s.i] == '0':
		s.i++
	case s.i < len(s.data) && s.data[s.i] >= '1' && s.data[s.i] <= '9':
		s.digits()
	default:
		return s.fail("invalid number")
	}
	if s.i < len(s.data) && s.data[s.i] == '.' {
		s.i++
		if s.digits() == 0 {
			return s.fail("invalid number")
		}
	}
	if s.i < len(s.data) && (s.data[s.i] == 'e' || s.data[s.i] == 'E') {
		s.i++
		if s.i < len(s.data) && (s.data[s.i] == '+' || s.data[s.i] == '-') {
			s.i++
		}
		if s.digits() == 0 {
			return s.fail("invalid number")
		}
	}
	return nil
}

func (s *checker) digits() int {
	n := 0
	for s.i < len(s.data) && s.data[s.i] >= '0' && s.data[s.i] <= '9' {
		s.i++
		n++
	}
	return n
}

func (s *checker) literal(word string) error {
	if !bytes.HasPrefix(s.data[s.i:], []byte(word)) {
		return s.fail("invalid literal")
	}
	s.i += len(word)
	return nil
}
