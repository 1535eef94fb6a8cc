package publicapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/waitroom/waitroom/internal/web/httpkit"
)

// decodeEnter reads an enter body. An empty body is an enter with no
// fields (an app that proves nothing yet). With plain user ids (load
// tests) nearly every body is exactly {"user_id":"<id>"}, spaces aside,
// with no escapes in the id; those are read directly, which costs a
// fraction of encoding/json (change 6 in docs/PERFORMANCE.md). Anything
// else goes through unmarshal, so both accept and refuse the same bodies
// (FuzzDecodeEnter checks it): the fast path's key is exact and single and
// its id valid UTF-8 without escapes, which the strict decoder accepts.
//
// The body is read into a pooled buffer, given back once decoded: what
// comes out of it are copies (string conversions, encoding/json's).
func decodeEnter(w http.ResponseWriter, r *http.Request) (EnterRequest, error) {
	buf := getBuf()
	defer putBuf(buf)
	body, err := httpkit.ReadBodyTo(*buf, w, r)
	if err != nil {
		return EnterRequest{}, err
	}
	*buf = body // it may have grown
	if emptyObject(body) {
		return EnterRequest{}, nil
	}
	if id, ok := plainUserID(body); ok {
		return EnterRequest{UserID: &id}, nil
	}
	return httpkit.Unmarshal[EnterRequest](body)
}

// emptyObject reports whether body is empty or {}, JSON whitespace aside:
// the enter of a browser or app that proves nothing yet, the usual one.
func emptyObject(body []byte) bool {
	b := httpkit.SkipSpace(body)
	if len(b) == 0 {
		return true
	}
	b, ok := bytes.CutPrefix(b, []byte("{"))
	if !ok {
		return false
	}
	b, ok = bytes.CutPrefix(httpkit.SkipSpace(b), []byte("}"))
	return ok && len(httpkit.SkipSpace(b)) == 0
}

// plainUserID returns the id of a body {"user_id":"<id>"} with optional
// JSON whitespace between tokens, where the id is valid UTF-8 with no
// quote, backslash or control byte, so that it means exactly its bytes.
// ok is false for any other body.
func plainUserID(body []byte) (id string, ok bool) {
	b := httpkit.SkipSpace(body)
	b, ok = bytes.CutPrefix(b, []byte("{"))
	if !ok {
		return "", false
	}
	b, ok = bytes.CutPrefix(httpkit.SkipSpace(b), []byte(`"user_id"`))
	if !ok {
		return "", false
	}
	b, ok = bytes.CutPrefix(httpkit.SkipSpace(b), []byte(":"))
	if !ok {
		return "", false
	}
	b, ok = bytes.CutPrefix(httpkit.SkipSpace(b), []byte(`"`))
	if !ok {
		return "", false
	}
	end := bytes.IndexByte(b, '"')
	if end < 0 {
		return "", false
	}
	v := b[:end]
	for _, c := range v {
		if c < 0x20 || c == '\\' {
			return "", false
		}
	}
	if !utf8.Valid(v) {
		return "", false
	}
	b, ok = bytes.CutPrefix(httpkit.SkipSpace(b[end+1:]), []byte("}"))
	if !ok || len(httpkit.SkipSpace(b)) != 0 {
		return "", false
	}
	return string(v), true
}

// writeTicketJSON answers 200 with t: the bytes httpkit.WriteJSON would write, built
// without reflection, as enter and status answer most of the service's
// requests (TestAppendTicketMatchesEncodingJSON checks the bytes), in a
// pooled buffer (a Write never keeps its argument).
func writeTicketJSON(w http.ResponseWriter, t TicketResponse) {
	httpkit.SetJSONHeaders(w, http.StatusOK)
	b := getBuf()
	*b = appendTicket(*b, t)
	_, _ = w.Write(*b)
	putBuf(b)
}

// bufs are buffers for the answers and bodies of enter and Status: a
// ticket with a place token is about 250 bytes, with an entry pass and a
// target URL about 1,500.
var bufs = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

func getBuf() *[]byte { return bufs.Get().(*[]byte) }

// putBuf empties b and gives it back, unless it grew past what the usual
// answers need.
func putBuf(b *[]byte) {
	if cap(*b) > 16<<10 {
		return
	}
	*b = (*b)[:0]
	bufs.Put(b)
}

// appendIntOrNull appends *v, or null for nil (as encoding/json does).
func appendIntOrNull(b []byte, v *int64) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	return strconv.AppendInt(b, *v, 10)
}

func appendTicket(b []byte, t TicketResponse) []byte {
	b = append(b, `{"queue":`...)
	b = appendString(b, t.Queue)
	b = append(b, `,"user_id":`...)
	b = appendString(b, t.UserID)
	b = append(b, `,"status":`...)
	b = appendString(b, string(t.Status))
	if t.Reason != "" {
		b = append(b, `,"reason":`...)
		b = appendString(b, t.Reason)
	}
	b = append(b, `,"position":`...)
	b = strconv.AppendInt(b, t.Position, 10)
	if t.Estimated {
		b = append(b, `,"position_estimated":true`...)
	}
	if t.Arrival != 0 {
		b = append(b, `,"arrival":`...)
		b = strconv.AppendInt(b, t.Arrival, 10)
	}
	if t.Lane != "" {
		b = append(b, `,"lane":`...)
		b = appendString(b, t.Lane)
	}
	b = append(b, `,"waiting":`...)
	b = strconv.AppendInt(b, t.Waiting, 10)
	b = append(b, `,"eta_seconds":`...)
	b = appendIntOrNull(b, t.ETASeconds)
	b = append(b, `,"eta_low_seconds":`...)
	b = appendIntOrNull(b, t.ETALowSeconds)
	b = append(b, `,"eta_high_seconds":`...)
	b = appendIntOrNull(b, t.ETAHighSeconds)
	b = append(b, `,"poll_after_ms":`...)
	b = strconv.AppendInt(b, t.PollAfterMS, 10)
	if t.Paused {
		b = append(b, `,"paused":true`...)
	}
	if t.OpensAt != "" {
		b = append(b, `,"opens_at":`...)
		b = appendString(b, t.OpensAt)
	}
	if t.DrawCommitment != "" {
		b = append(b, `,"draw_commitment":`...)
		b = appendString(b, t.DrawCommitment)
	}
	if t.DrawKey != "" {
		b = append(b, `,"draw_key":`...)
		b = appendString(b, t.DrawKey)
	}
	if t.DrawPlace != 0 {
		b = append(b, `,"draw_place":`...)
		b = strconv.AppendInt(b, t.DrawPlace, 10)
	}
	if t.Message != "" {
		b = append(b, `,"message":`...)
		b = appendString(b, t.Message)
	}
	if t.ReopensAt != "" {
		b = append(b, `,"reopens_at":`...)
		b = appendString(b, t.ReopensAt)
	}
	if t.PlaceToken != "" {
		b = append(b, `,"place_token":`...)
		b = appendString(b, t.PlaceToken)
	}
	if t.Pass != "" {
		b = append(b, `,"pass":`...)
		b = appendString(b, t.Pass)
	}
	if t.TargetURL != "" {
		b = append(b, `,"target_url":`...)
		b = appendString(b, t.TargetURL)
	}
	if t.NextPath != "" {
		b = append(b, `,"next_path":`...)
		b = appendString(b, t.NextPath)
	}
	return append(b, "}\n"...)
}

// appendString appends s as a JSON string, escaped as encoding/json
// escapes it (including <, > and &): directly when s is printable ASCII
// that needs no escape, as ids and queue names are; otherwise through
// encoding/json.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
