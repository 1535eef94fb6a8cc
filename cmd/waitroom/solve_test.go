package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/trust/challenge"
)

// solveTestDifficulty is a real difficulty, small enough that a solve
// takes milliseconds.
const solveTestDifficulty = 12

// askProofOfWork sets queue q's challenge_difficulty to d through the
// admin API, as an operator does.
func (r *replica) askProofOfWork(t *testing.T, q string, d int) {
	t.Helper()
	req, err := http.NewRequest("PATCH", r.base+"/admin/v1/queues/"+q, strings.NewReader(fmt.Sprintf(`{"challenge_difficulty":%d}`, d)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("PATCH challenge_difficulty: %d %s", resp.StatusCode, b)
	}
}

// raw makes a request with a JSON body and returns the status and body.
func (r *replica) raw(t *testing.T, method, path, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, r.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// runSolveBinary runs `waitroom solve args...` as a process (this test
// binary is the service's main, bounds_test.go) with stdin, and returns
// its exit code, stdout and stderr.
func runSolveBinary(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, append([]string{"solve"}, args...)...)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return exit.ExitCode(), out.String(), errOut.String()
	case err != nil:
		t.Fatal(err)
	}
	return 0, out.String(), errOut.String()
}

// A queue that asks for proof of work refuses an enter without it; the
// challenge it issues, piped through `waitroom solve` (the process, and
// the function it runs), gives a body that enters.
func TestSolveEntersAQueueThatAsks(t *testing.T) {
	q := fmt.Sprintf("solve%d", time.Now().UnixNano())
	r := startReplica(t, map[string]string{"WAITROOM_QUEUES": q, "WAITROOM_ADMIN_TOKEN": adminToken})
	r.askProofOfWork(t, q, solveTestDifficulty)
	api := "/api/v1/queues/" + q

	code, body := r.raw(t, "POST", api+"/enter", "{}")
	if code != 403 || !strings.Contains(string(body), `"challenge_required"`) {
		t.Fatalf("enter without a solution: %d %s, want 403 challenge_required", code, body)
	}
	// What solve says to enter's refusal: where to get a challenge.
	if exit, out, errOut := runSolveBinary(t, string(body)); exit != 2 || out != "" || !strings.Contains(errOut, "/challenge") {
		t.Errorf("solve < enter's refusal: exit %d, stdout %q, stderr %q; want 2, nothing, and where a challenge is", exit, out, errOut)
	}

	solvers := map[string]func(ch []byte) string{
		"process": func(ch []byte) string {
			exit, out, errOut := runSolveBinary(t, string(ch))
			if exit != 0 || errOut != "" {
				t.Fatalf("solve: exit %d, stderr %q", exit, errOut)
			}
			return out
		},
		"flags": func(ch []byte) string {
			var c struct{ Challenge string }
			if err := json.Unmarshal(ch, &c); err != nil {
				t.Fatal(err)
			}
			exit, out, errOut := runSolveBinary(t, "", "-challenge", c.Challenge, "-difficulty", fmt.Sprint(solveTestDifficulty))
			if exit != 0 || errOut != "" {
				t.Fatalf("solve -challenge: exit %d, stderr %q", exit, errOut)
			}
			return out
		},
		"function": func(ch []byte) string {
			var out, errOut bytes.Buffer
			if exit := solveMain(nil, bytes.NewReader(ch), &out, &errOut); exit != 0 {
				t.Fatalf("solveMain: exit %d, stderr %q", exit, errOut.String())
			}
			return out.String()
		},
	}
	for name, solve := range solvers {
		t.Run(name, func(t *testing.T) {
			code, ch := r.raw(t, "GET", api+"/challenge", "")
			if code != 200 {
				t.Fatalf("challenge: %d %s", code, ch)
			}
			out := solve(ch)
			var sol struct{ Challenge, Nonce string }
			dec := json.NewDecoder(strings.NewReader(out))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&sol); err != nil || !strings.HasSuffix(out, "}\n") {
				t.Fatalf("solve printed %q, want one JSON object and a newline: %v", out, err)
			}
			if got := challenge.LeadingZeroBits(sol.Challenge, sol.Nonce); got < solveTestDifficulty || !strings.Contains(string(ch), sol.Challenge) {
				t.Fatalf("solve printed %q: %d zero bits, want the challenge's and ≥ %d", out, got, solveTestDifficulty)
			}
			var tk ticket
			code, b := r.raw(t, "POST", api+"/enter", out)
			if err := json.Unmarshal(b, &tk); code != 200 || err != nil || (tk.Status != "WAITING" && tk.Status != "ENTERED") {
				t.Fatalf("enter with solve's body: %d %s", code, b)
			}
			// A solution enters once.
			if code, b := r.raw(t, "POST", api+"/enter", out); code != 403 {
				t.Errorf("the same solution again: %d %s, want 403", code, b)
			}
		})
	}
}

// Input solve cannot take is refused with a reason on stderr, nothing on
// stdout and exit code 2, before any hashing.
func TestSolveRefusesMalformedInput(t *testing.T) {
	valid := "c1.q.8.1795306398000.AAAAAAAAAAAAAAAAAAAAAA.mac"
	for _, tc := range []struct {
		name, stdin string
		args        []string
		want        string // in stderr
	}{
		{"nothing", "", nil, "nothing on stdin"},
		{"blank", " \n", nil, "nothing on stdin"},
		{"not JSON", "c1.q.8", nil, "not a challenge's JSON"},
		{"truncated", `{"challenge":"` + valid, nil, "not a challenge's JSON"},
		{"two values", `{"challenge":"` + valid + `"} {}`, nil, "more than one"},
		{"an array", `["` + valid + `"]`, nil, "not a challenge's JSON"},
		{"no challenge", `{"difficulty":8}`, nil, `no "challenge"`},
		{"challenge not a string", `{"challenge":8}`, nil, "not a challenge's JSON"},
		{"empty challenge", `{"challenge":"","difficulty":8}`, nil, "empty"},
		{"challenge with a space", `{"challenge":"c1.q 8","difficulty":8}`, nil, "printable ASCII"},
		{"challenge with a newline", `{"challenge":"c1.q\n.8","difficulty":8}`, nil, "printable ASCII"},
		{"challenge too long", `{"challenge":"` + strings.Repeat("a", maxChallengeBytes+1) + `","difficulty":8}`, nil, "over"},
		{"negative difficulty", `{"challenge":"` + valid + `","difficulty":-1}`, nil, "want 0…"},
		{"difficulty beyond a queue's", `{"challenge":"x","difficulty":33}`, nil, "want 0…"},
		{"difficulty not the challenge's", `{"challenge":"` + valid + `","difficulty":9}`, nil, "issued at 8"},
		{"difficulty a fraction", `{"challenge":"` + valid + `","difficulty":8.5}`, nil, "not a challenge's JSON"},
		{"no stated difficulty", `{"challenge":"opaque"}`, nil, "give -difficulty"},
		{"enter's refusal", `{"error":{"code":"challenge_required","message":"…","difficulty":8}}`, nil, "challenge_required"},
		{"another error", `{"error":{"code":"rate_limited","message":"…"}}`, nil, `"rate_limited"`},
		{"a ticket", `{"queue":"q","status":"WAITING","position":3}`, nil, "ticket"},
		{"too much", strings.Repeat(" ", maxSolveInput+1), nil, "over"},
		{"an argument", "", []string{"extra"}, "unexpected argument"},
		{"an unknown flag", "", []string{"-nonce", "1"}, "not defined"},
		{"difficulty without challenge", "", []string{"-difficulty", "8"}, "needs -challenge"},
		{"flag difficulty negative", "", []string{"-challenge", valid, "-difficulty", "-1"}, "want 0…"},
		{"flag difficulty too high", "", []string{"-challenge", "x", "-difficulty", "40"}, "want 0…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			exit := solveMain(tc.args, strings.NewReader(tc.stdin), &out, &errOut)
			if exit != 2 || out.Len() != 0 || !strings.Contains(errOut.String(), tc.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2, nothing, and %q", exit, out.String(), errOut.String(), tc.want)
			}
		})
	}
	// The process exits with it too, through main's dispatch.
	if exit, out, errOut := runSolveBinary(t, "{}"); exit != 2 || out != "" || !strings.HasPrefix(errOut, "waitroom: solve: ") {
		t.Errorf("the process: exit %d, stdout %q, stderr %q; want 2, nothing, and a reason", exit, out, errOut)
	}
	// -h is not a failure.
	var out, errOut bytes.Buffer
	if exit := solveMain([]string{"-h"}, strings.NewReader(""), &out, &errOut); exit != 0 || !strings.Contains(errOut.String(), "usage: waitroom solve") {
		t.Errorf("-h: exit %d, stderr %q", exit, errOut.String())
	}
}

// Whatever solve is given, reading it never panics, and what it accepts
// is something it can solve: printable ASCII at a difficulty a queue may
// ask, the challenge's own when it states one.
func FuzzSolveInput(f *testing.F) {
	f.Add(`{"challenge":"c1.q.8.1795306398000.AAAA.mac","difficulty":8,"expires_at":"2026-01-01T00:00:00Z"}`, "")
	f.Add(`{"challenge":"c1.q.8.1.a.b"}`, "")
	f.Add(`{"challenge":"opaque","difficulty":3}`, "")
	f.Add(`{"error":{"code":"challenge_required","difficulty":8}}`, "")
	f.Add(`{"status":"WAITING"}`, "")
	f.Add(`{"challenge":null,"difficulty":null}`, "")
	f.Add(`[]`, "")
	f.Add(``, "-challenge c1.q.8.1.a.b")
	f.Add(``, "-challenge x -difficulty 5")
	f.Add(`{"challenge":"c1.q.08.1.a.b","difficulty":8}`, "")
	f.Add(`{"challenge":"c1.q.-0.1.a.b"}`, "")
	f.Fuzz(func(t *testing.T, stdin, args string) {
		ch, d, err := solveInput(strings.Fields(args), strings.NewReader(stdin), io.Discard)
		if err != nil {
			if ch != "" || d != 0 {
				t.Fatalf("refused (%v) but returned %q at %d", err, ch, d)
			}
			return
		}
		if ch == "" || len(ch) > maxChallengeBytes || d < 0 || d > queue.MaxChallengeDifficulty {
			t.Fatalf("accepted %q at %d", ch, d)
		}
		for i := 0; i < len(ch); i++ {
			if ch[i] < 0x21 || ch[i] > 0x7e {
				t.Fatalf("accepted %q with byte 0x%02x", ch, ch[i])
			}
		}
		if stated, ok := challenge.Stated(ch); ok && stated != d {
			t.Fatalf("accepted %q at %d, which states %d", ch, d, stated)
		}
	})
}
