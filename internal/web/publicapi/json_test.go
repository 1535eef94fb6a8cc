package publicapi

import (
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
	"unicode/utf8"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/infra/version"
	"github.com/waitroom/waitroom/internal/web/httpkit"
)

func TestPlainUserIDTakesTheUsualBodies(t *testing.T) {
	for body, want := range map[string]string{
		`{"user_id":"user-1"}`:                 "user-1",
		" {\n\t\"user_id\" : \"u 2\" }\r\n":    "u 2",
		`{"user_id":"김철수"}`:                    "김철수",
		`{"user_id":"a<b>&'c/"}`:               "a<b>&'c/",
		`{"user_id":""}`:                       "", // refused later, by the store
		`{"user_id":"` + "\u2028" + `x"}`:      "\u2028x",
		`{"user_id":"1234567890123456789012"}`: "1234567890123456789012",
	} {
		if got, ok := plainUserID([]byte(body)); !ok || got != want {
			t.Errorf("plainUserID(%q) = %q, %v; want %q, true", body, got, ok, want)
		}
	}
	for _, body := range []string{
		``, `{}`, `{"user_id":"a\"b"}`, `{"user_id":"a\\b"}`, `{"user_id":"a\u0041"}`,
		`{"USER_ID":"a"}`, `{"user_id":"a","user_id":"b"}`, `{"user_id":"a"}x`, `{"user_id":"a"}{}`,
		`{"user_id":null}`, `{"user_id":1}`, `{"user_id":"a"`, "{\"user_id\":\"a\x01\"}",
		"{\"user_id\":\"\xff\"}", "\v{\"user_id\":\"a\"}",
	} {
		if got, ok := plainUserID([]byte(body)); ok {
			t.Errorf("plainUserID(%q) = %q, true; want it left to encoding/json", body, got)
		}
	}
}

// FuzzDecodeEnter checks that every body the fast paths take, encoding/json
// takes too, with the same meaning.
func FuzzDecodeEnter(f *testing.F) {
	for _, s := range []string{
		`{"user_id":"user-1"}`, ` { "user_id" : "x" } `, `{"user_id":"a\"b"}`, `{"user_id":"é"}`,
		"{\"user_id\":\"\xc3\"}", `{"user_id":"a"}  {}`, `{"user_id":"a",}`, `{"user_id":"\u00e9"}`,
		`{"USER_ID":"a"}`, `{"user_id":"a","user_id":"b"}`, `{"user_id":"\ud800"}`, `{"join_token":"j"}`,
	} {
		f.Add([]byte(s))
	}
	f.Add([]byte(" {\n} "))
	f.Add([]byte("{}{}"))
	f.Fuzz(func(t *testing.T, body []byte) {
		if emptyObject(body) && len(httpkit.SkipSpace(body)) > 0 {
			if slow, err := httpkit.Unmarshal[EnterRequest](body); err != nil || slow.UserID != nil || slow.JoinToken != "" {
				t.Fatalf("body %q: fast path an empty object, encoding/json %+v (%v)", body, slow, err)
			}
		}
		if slow, err := httpkit.Unmarshal[EnterRequest](body); err == nil && slow.UserID != nil && !utf8.ValidString(*slow.UserID) {
			t.Fatalf("body %q: the strict decoder took an id of invalid UTF-8 %q", body, *slow.UserID)
		}
		fast, ok := plainUserID(body)
		if !ok {
			return
		}
		slow, err := httpkit.Unmarshal[EnterRequest](body)
		if err != nil || slow.UserID == nil || *slow.UserID != fast || slow.JoinToken != "" {
			t.Fatalf("body %q: fast path %q, encoding/json %+v (%v)", body, fast, slow, err)
		}
	})
}

// The strict decoder refuses what encoding/json would turn into another
// body's meaning; plainUserID leaves all of these to it.
func TestUnmarshalIsStrict(t *testing.T) {
	for _, body := range []string{
		"{\"user_id\":\"a\xffb\"}", `{"user_id":"\ud800"}`, `{"user_id":"\udc00x"}`,
		`{"user_id":"a","user_id":"b"}`, `{"USER_ID":"a"}`, `{"User_Id":"a"}`, `{"Join_Token":"j"}`,
		`{"user_id":"a","nope":1}`, `null`, `[]`, `"x"`,
	} {
		if _, ok := plainUserID([]byte(body)); ok {
			t.Errorf("plainUserID took %q", body)
		}
		if v, err := httpkit.Unmarshal[EnterRequest]([]byte(body)); err != httpkit.ErrInvalidJSON {
			t.Errorf("unmarshal(%q) = %+v, %v; want httpkit.ErrInvalidJSON", body, v, err)
		}
	}
	for body, want := range map[string]string{
		`{"user_id":"\ud83d\ude00"}`: "\U0001F600",
		`{"user_id":"\u00e9"}`:       "é",
		`{"user_id":"a\"b"}`:         `a"b`,
	} {
		if v, err := httpkit.Unmarshal[EnterRequest]([]byte(body)); err != nil || v.UserID == nil || *v.UserID != want {
			t.Errorf("unmarshal(%q) = %+v, %v; want %q", body, v, err, want)
		}
	}
}

// BenchmarkUnmarshal: enter bodies that miss the fast path, and the fast
// path itself. Before the strict decoder (commit 9c8762a) the same
// benchmark measured encoding/json alone (docs/RELIABILITY.md).
//
//	go test -run '^$' -bench Unmarshal -benchmem ./internal/web/publicapi/
func BenchmarkUnmarshal(b *testing.B) {
	for _, c := range []struct{ name, body string }{
		{"join_token", `{"join_token":"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c2VyLTEyMyIsInF1ZXVlIjoiZGVmYXVsdCIsImV4cCI6MTc2NTAwMDAwMH0.c2lnbmF0dXJl"}`},
		{"user_id_escaped", `{"user_id":"user-\u00e9-42"}`},
		{"refill_size", `{"refill_size": 25}`}, // an unknown field: the refusal
	} {
		b.Run(c.name, func(b *testing.B) {
			body := []byte(c.body)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := httpkit.Unmarshal[EnterRequest](body); err != nil && c.name != "refill_size" {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("decodeEnter_fast", func(b *testing.B) {
		body := []byte(`{"user_id":"user-123456"}`)
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := plainUserID(body); !ok {
				b.Fatal("slow")
			}
		}
	})
}

func TestAppendTicketMatchesEncodingJSON(t *testing.T) {
	for _, tk := range []TicketResponse{
		{},
		{Queue: "default", UserID: "user-1", Status: queue.Waiting, Position: 12, Waiting: 300, ETASeconds: ptr(int64(6)), ETALowSeconds: ptr(int64(0)), ETAHighSeconds: ptr(int64(11)), PollAfterMS: 5400},
		{Queue: "default", UserID: "user-1", Status: queue.Waiting, Position: 1800, Waiting: 3000, ETASeconds: ptr(int64(896)), ETALowSeconds: ptr(int64(710)), ETAHighSeconds: ptr(int64(901)), PollAfterMS: 60000},
		{Queue: "q_1-x", UserID: "김<&>\"\\'\u2028\u2029", Status: queue.Entered, Pass: "eyJhbGciOiJFZERTQSJ9.e30.c2ln", TargetURL: "https://shop.example/order?event=7&wr_pass=eyJ"},
		{Queue: "default", UserID: "a:AAAA", Status: queue.Waiting, Position: 1, PlaceToken: "v1.default.YTpB.bWFj"},
		{Queue: "default", UserID: "a:AAAA", Status: queue.Waiting, Position: 9, Paused: true},
		{Queue: "default", UserID: "a:AAAA", Status: queue.NotWaiting, Reason: "abandoned"},
		{Queue: "default", UserID: "a:AAAA", Status: queue.Waiting, OpensAt: "2026-12-24T09:00:00Z"},
		{Queue: "default", UserID: "a:AAAA", Status: queue.Waiting, OpensAt: "2026-12-24T09:00:00Z", DrawCommitment: "9f86d081884c7d65"},
		{Queue: "default", UserID: "a:AAAA", Status: queue.Waiting, Position: 3, DrawCommitment: "9f86", DrawKey: "ab01", DrawPlace: 3},
		{Queue: "q", UserID: "u", Status: queue.NotWaiting, Position: math.MinInt64, Waiting: math.MaxInt64, ETASeconds: ptr(int64(-1)), ETALowSeconds: ptr(int64(math.MinInt64)), ETAHighSeconds: ptr(int64(math.MaxInt64)), PollAfterMS: 0},
	} {
		checkTicketBytes(t, tk)
	}
}

func FuzzAppendTicket(f *testing.F) {
	f.Add("default", "user-1", "WAITING", int64(3), int64(10), int64(5), int64(5100), "v1.default.YTpB.bWFj", "", "")
	f.Add("q", "a\"b\\c<d>&e\x01\xff\u2028", "ENTERED", int64(0), int64(-1), int64(0), int64(0), "", "e.y.J", "https://x/?a=1&b=2")
	f.Fuzz(func(t *testing.T, q, user, status string, pos, waiting, eta, poll int64, token, pass, target string) {
		etas := []*int64{ptr(eta), ptr(eta - waiting), ptr(eta + poll)}
		if pos%2 == 0 { // paused: no time promised
			etas = []*int64{nil, nil, nil}
		}
		checkTicketBytes(t, TicketResponse{q, user, queue.Status(status), token, pos, pos%3 == 0, pos * 7, pass, waiting, etas[0], etas[1], etas[2], poll, pos%2 == 0, target, token, pass, pos * 3, user, target, token, pass, target, target})
	})
}

func ptr[T any](v T) *T { return &v }

func checkTicketBytes(t *testing.T, tk TicketResponse) {
	t.Helper()
	want, err := json.Marshal(tk)
	if err != nil {
		t.Fatal(err)
	}
	if got := appendTicket(nil, tk); string(got) != string(want)+"\n" {
		t.Fatalf("appendTicket(%+v)\n got %s\nwant %s", tk, got, want)
	}
}

// The health checks write, encoded once, what httpkit.WriteJSON wrote for them.
func TestHealthBodiesMatchEncodingJSON(t *testing.T) {
	for _, tc := range []struct {
		body []byte
		want map[string]string
	}{
		{healthyBody, map[string]string{"status": "ok", "version": version.String()}},
		{readyBody, map[string]string{"status": "ready"}},
	} {
		w := httptest.NewRecorder()
		httpkit.WriteJSON(w, http.StatusOK, tc.want)
		if w.Body.String() != string(tc.body) {
			t.Errorf("%s: writes %q, writeJSON %q", tc.want["status"], tc.body, w.Body)
		}
	}
}
