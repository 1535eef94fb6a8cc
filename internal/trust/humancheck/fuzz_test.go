package humancheck

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// judgeOnly is a Checker fit for judge alone: it serves roomHost.
func judgeOnly() *Checker {
	return &Checker{hosts: map[string]bool{"shop.example": true}, log: discard}
}

// FuzzJudge feeds siteverify answers of every shape: judge never panics,
// and passes only a JSON answer that says true.
func FuzzJudge(f *testing.F) {
	for _, s := range []string{
		`{"success":true,"hostname":"shop.example"}`,
		`{"success":true,"hostname":"SHOP.EXAMPLE","error-codes":[]}`,
		`{"success":false,"error-codes":["invalid-input-response"]}`,
		`{"success":"true","hostname":"shop.example"}`,
		`{"success":1,"hostname":"shop.example"}`,
		`{"hostname":"shop.example"}`,
		`{"success":true}`,
		`{"success":true,"hostname":"shop.example.evil"}`,
		`{"success":true,"hostname":["shop.example"]}`,
		`[true]`, `true`, `null`, ``, `{"succ`, "\x00\xff",
		`{"success":false,"error-codes":["` + strings.Repeat("x", 500) + `","a","b","c","d","e"]}`,
		`{"success":true,"hostname":"shop.example","success":false}`,
	} {
		f.Add([]byte(s))
	}
	c := judgeOnly()
	f.Fuzz(func(t *testing.T, body []byte) {
		err := c.judge(context.Background(), body)
		if err == nil {
			if !json.Valid(body) || !bytes.Contains(bytes.ToLower(body), []byte("true")) {
				t.Fatalf("passed %q", body)
			}
			return
		}
		var e *Error
		if !errors.As(err, &e) || !(errors.Is(err, ErrFailed) || errors.Is(err, ErrUnavailable)) {
			t.Fatalf("judge(%q) = %v: not a typed error", body, err)
		}
		if len(e.Codes) > maxCodes {
			t.Fatalf("judge(%q) kept %d codes", body, len(e.Codes))
		}
		for _, code := range e.Codes {
			if len(code) > maxCodeBytes {
				t.Fatalf("judge(%q) kept a code of %d bytes", body, len(code))
			}
		}
	})
}

// FuzzJudgeFields builds answers from their fields: the verdict is exactly
// success and a served host, whatever the rest says.
func FuzzJudgeFields(f *testing.F) {
	f.Add(true, "shop.example", "", "invalid-input-response")
	f.Add(true, "Shop.Example", "login", "")
	f.Add(false, "shop.example", "", "timeout-or-duplicate")
	f.Add(true, "evil.example", "", "")
	f.Add(true, "", "", "")
	f.Add(false, "shop.example", "", "invalid-input-secret")
	c := judgeOnly()
	f.Fuzz(func(t *testing.T, success bool, host, action, code string) {
		body, _ := json.Marshal(map[string]any{"success": success, "hostname": host, "action": action, "error-codes": []string{code}})
		err := c.judge(context.Background(), body)
		want := success && strings.EqualFold(host, "shop.example") && strings.ToLower(host) == "shop.example"
		if (err == nil) != want {
			t.Fatalf("judge(%s) = %v, want pass %v", body, err, want)
		}
		if !success && misconfigured[code] != errors.Is(err, ErrUnavailable) {
			t.Fatalf("judge(%s) = %v: a misconfiguration code is the room's, any other the visitor's", body, err)
		}
	})
}
