package httpkit

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/waitroom/waitroom/internal/hygiene/strictjson"
)

// maxBodyBytes bounds request bodies; every valid one is far smaller.
const maxBodyBytes = 4 << 10

// Decode reads exactly one JSON object of type T from the body.
func Decode[T any](w http.ResponseWriter, r *http.Request) (T, error) {
	body, err := ReadBody(w, r)
	if err != nil {
		var v T
		return v, err
	}
	return Unmarshal[T](body)
}

// DecodeUpTo is Decode with a body of up to limit bytes: for the few
// requests that carry a list (an upload of invitation codes).
func DecodeUpTo[T any](w http.ResponseWriter, r *http.Request, limit int64) (T, error) {
	body, err := readBody(make([]byte, 0, 512), w, r, limit)
	if err != nil {
		var v T
		return v, err
	}
	return Unmarshal[T](body)
}

// ReadBody reads the whole body, refusing more than maxBodyBytes.
func ReadBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	return ReadBodyTo(make([]byte, 0, 512), w, r)
}

// ReadBodyTo is ReadBody appending to b.
func ReadBodyTo(b []byte, w http.ResponseWriter, r *http.Request) ([]byte, error) {
	return readBody(b, w, r, maxBodyBytes)
}

func readBody(b []byte, w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	body, err := readAll(b, http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		if tooLarge := (*http.MaxBytesError)(nil); errors.As(err, &tooLarge) {
			return nil, ErrBodyTooLarge
		}
		return nil, ErrInvalidJSON
	}
	return body, nil
}

// readAll is io.ReadAll appending to b.
func readAll(b []byte, r io.Reader) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // more room
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// Unmarshal decodes body as exactly one JSON object of type T, strictly
// (internal/hygiene/strictjson): unknown fields are refused so a typo
// ("refillSize") is an error, not a no-op; keys match exactly ("USER_ID"
// is unknown) and only once; and strings must be valid UTF-8 without lone
// surrogates, so that two different bodies never decode to one id.
func Unmarshal[T any](body []byte) (T, error) {
	var v T
	if b := SkipSpace(body); len(b) == 0 || b[0] != '{' {
		return v, ErrInvalidJSON
	}
	if err := strictjson.Unmarshal(body, &v); err != nil {
		return v, ErrInvalidJSON
	}
	return v, nil
}

// SkipSpace drops leading JSON whitespace.
func SkipSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r') {
		b = b[1:]
	}
	return b
}

// WriteJSON answers with v as JSON.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	SetJSONHeaders(w, status)
	// The status is sent; an encoding error here can only be a gone client.
	_ = json.NewEncoder(w).Encode(v)
}

// SetJSONHeaders starts a JSON answer of status that no cache keeps.
func SetJSONHeaders(w http.ResponseWriter, status int) {
	h := w.Header()
	h["Content-Type"] = JSONHeader
	h["Cache-Control"] = NoStoreHeader
	w.WriteHeader(status)
}

// RFC3339 formats t for the API, "" for the zero time.
func RFC3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}
