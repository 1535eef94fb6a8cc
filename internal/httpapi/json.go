package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
)

// maxBodyBytes bounds request bodies; every valid one is far smaller.
const maxBodyBytes = 4 << 10

// decode reads exactly one JSON object of type T from the body. Unknown
// fields are refused so a typo ("refillSize") is an error, not a no-op.
func decode[T any](w http.ResponseWriter, r *http.Request) (T, error) {
	var v T
	r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	err := dec.Decode(&v)
	if err == nil {
		// Anything after the object is an error too.
		if extra := dec.Decode(&struct{}{}); extra != io.EOF {
			err = extra
			if err == nil {
				err = errInvalidJSON
			}
		}
	}
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return v, errBodyTooLarge
		}
		return v, errInvalidJSON
	}
	return v, nil
}

// writeJSON answers with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	h := w.Header()
	h["Content-Type"] = jsonHeader
	h["Cache-Control"] = noStoreHeader
	w.WriteHeader(status)
	// The status is sent; an encoding error here can only be a gone client.
	_ = json.NewEncoder(w).Encode(v)
}
