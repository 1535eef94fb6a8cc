package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/docs/examples/verify/orderapi"
	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/testkit/wait"
)

// The verification examples of docs/examples/verify run against a live
// waitroom (the real router over real Redis): each accepts a real pass and
// refuses every other kind (expired, for another queue, forged, signed by
// another key, alg none, alg confusion).

const examplesDir = "../../../docs/examples/verify"

// exampleTool finds a tool the examples need; without it the test skips
// locally and fails on CI (CI=true), as the browser and nginx tests do.
func exampleTool(t *testing.T, what string, candidates []string, works func(path string) bool) string {
	t.Helper()
	for _, c := range candidates {
		if p, err := exec.LookPath(c); err == nil && works(p) {
			return p
		}
	}
	msg := what + " not found; run scripts/install-tools.sh test"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// runExample runs a verification example with the pass on stdin: its
// exit code and what it printed. Safe from several goroutines.
func runExample(t *testing.T, pass string, name string, args ...string) (int, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = strings.NewReader(pass)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		return -1, "timed out: " + stderr.String()
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Errorf("%s: %v", name, err)
	}
	return code, out.String() + stderr.String()
}

func TestVerifyExamples(t *testing.T) {
	t.Parallel()
	python := exampleTool(t, "python3 with PyJWT (python3-jwt, python3-cryptography)", []string{"python3", "/usr/bin/python3"}, func(p string) bool {
		return exec.Command(p, "-c", "import jwt, cryptography").Run() == nil
	})
	node := exampleTool(t, "node (nodejs)", []string{"node", "nodejs"}, func(string) bool { return true })
	e := newEnv(t, redistest.Client(t), queue.Settings{RefillSize: 3, RefillInterval: time.Hour, SessionTTL: time.Hour}, testTimeout, Options{})
	tk, _ := e.enterAnon()
	if tk.Status != queue.Entered || tk.Pass == "" {
		t.Fatalf("not admitted: %+v", tk)
	}
	jwks := e.srv.URL + "/.well-known/jwks.json"
	variants := passVariants(t, e, tk.Pass)
	examples := map[string][]string{
		"python": {python, filepath.Join(examplesDir, "verify.py"), jwks, testIssuer, e.queue},
		"node":   {node, filepath.Join(examplesDir, "verify.mjs"), jwks, testIssuer, e.queue},
	}
	var wg sync.WaitGroup // the processes run side by side: each starts an interpreter
	for lang, cmd := range examples {
		for _, name := range []string{"valid", "expired", "other queue", "forged sub", "another key", "alg none", "alg confusion"} {
			tok := variants[name]
			wg.Go(func() {
				code, out := runExample(t, tok, cmd[0], cmd[1:]...)
				if name != "valid" {
					if code != 1 || !strings.Contains(out, "refused") {
						t.Errorf("%s accepted the %s pass (exit %d): %s", lang, name, code, out)
					}
					return
				}
				var c struct{ Queue, Sub string }
				if err := json.Unmarshal([]byte(out), &c); code != 0 || err != nil || c.Queue != e.queue || c.Sub != tk.UserID {
					t.Errorf("%s refused the real pass (exit %d): %s", lang, code, out)
				}
			})
		}
	}
	wg.Wait()

	// Go: an order API behind the middleware, its calls carrying the pass.
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	api, err := orderapi.New(ctx, e.srv.URL, testIssuer, e.queue)
	if err != nil {
		t.Fatal(err)
	}
	book := func(header, value string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", "/api/book", nil)
		r.Header.Set(header, value)
		w := httptest.NewRecorder()
		api.ServeHTTP(w, r)
		return w
	}
	for name, tok := range variants {
		if name == "valid" {
			continue
		}
		if w := book("Authorization", "Bearer "+tok); w.Code != http.StatusUnauthorized {
			t.Errorf("go accepted the %s pass: %d %s", name, w.Code, w.Body)
		}
	}
	w := book(gate.HeaderPass, tk.Pass)
	if w.Code != 200 || !strings.Contains(w.Body.String(), tk.UserID) || w.Header().Get(gate.HeaderCommand) != "" {
		t.Fatalf("go refused the real pass: %d %s %v", w.Code, w.Body, w.Header())
	}
	// The API said done: the admission is over, the pass opens nothing.
	wantError(t, e.verify(tk.Pass), 401, "invalid_pass")
	// The middleware asks again within its recheck interval (2 s).
	wait.For(t, 10*time.Second, "the done pass to be refused by the middleware", func() (bool, string) {
		w := book("Authorization", "Bearer "+tk.Pass)
		return w.Code == http.StatusUnauthorized, w.Body.String()
	})
}
