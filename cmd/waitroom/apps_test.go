package main

import (
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// docs/APPS.md holds the native apps' flow, whose marked blocks run as
// docs/API.md's do.
const (
	appsDoc  = "../../docs/APPS.md"
	appsMark = "<!-- TestAppsExamples runs this block -->"
)

// docs/APPS.md's marked curl examples run as pasted against a real
// service: the flow with a bearer place credential (enter, poll, the
// pass, done, leave), then, in a paused queue so that the place waits,
// its move to another device, after which the first device's
// credential answers 401 place_moved. Every example answer is checked
// as docs/API.md's are.
func TestAppsExamples(t *testing.T) {
	needShellTools(t)
	q := fmt.Sprintf("apps%d", time.Now().UnixNano())
	r := startReplica(t, map[string]string{"WAITROOM_QUEUES": q, "WAITROOM_ADMIN_TOKEN": adminToken, "WAITROOM_REFILL_INTERVAL": "1s"})
	host := strings.TrimPrefix(r.base, "http://")
	dir := t.TempDir()
	blocks := docBlocks(t, appsDoc, appsMark)
	if len(blocks) != 2 {
		t.Fatalf("docs/APPS.md has %d marked blocks, want 2 (the flow, the move)", len(blocks))
	}
	checkExamples(t, appsDoc, 0, blocks[0], runDocBlock(t, appsDoc, 0, blocks[0], host, q, dir))

	// The move: a place waiting in line, which it does in a paused queue.
	patchQueue(t, r, q, `{"paused":true}`)
	outputs := runDocBlock(t, appsDoc, 1, blocks[1], host, q, dir)
	checkExamples(t, appsDoc, 1, blocks[1], outputs)
	moved := false
	for si, st := range blocks[1] {
		if strings.Contains(st.cmd, "LAPTOP_TOKEN") && strings.Contains(st.cmd, "/status") {
			// outputs[si] is step si's (after the previous one's number).
			moved = strings.Contains(outputs[si], `"place_moved"`) && strings.Contains(outputs[si], " 401")
			if !moved {
				t.Errorf("docs/APPS.md, %q: answered %q, want 401 place_moved", st.cmd, outputs[si])
			}
		}
	}
	if !moved {
		t.Error("docs/APPS.md's move shows no status of the first device's credential")
	}
}

// docs/APPS.md's flow runs as pasted against a queue that asks for proof
// of work: its enter is refused with challenge_required, and the next
// step pays with `waitroom solve` and gets the place the flow goes on
// with.
func TestAppsExamplesPayProofOfWork(t *testing.T) {
	needShellTools(t)
	q := fmt.Sprintf("appspow%d", time.Now().UnixNano())
	r := startReplica(t, map[string]string{"WAITROOM_QUEUES": q, "WAITROOM_ADMIN_TOKEN": adminToken, "WAITROOM_REFILL_INTERVAL": "1s"})
	r.askProofOfWork(t, q, solveTestDifficulty)
	steps := docBlocks(t, appsDoc, appsMark)[0]
	outputs := runDocBlock(t, appsDoc, 0, steps, strings.TrimPrefix(r.base, "http://"), q, t.TempDir())
	solved := 0
	for si, st := range steps {
		if !strings.Contains(st.cmd, "waitroom solve") {
			continue
		}
		solved++
		// outputs[si] is step si's (after the previous one's number).
		if !strings.Contains(outputs[si-1], `"challenge_required"`) {
			t.Errorf("docs/APPS.md, %q: answered %q, want a refusal with challenge_required", steps[si-1].cmd, outputs[si-1])
		}
		if !strings.Contains(outputs[si], `"place_token"`) {
			t.Errorf("docs/APPS.md: the enter with waitroom solve's body answered %q, want a place", outputs[si])
		}
	}
	if solved != 1 {
		t.Fatalf("docs/APPS.md's flow solves %d times, want 1", solved)
	}
}

// needShellTools skips (or in CI fails) a test of the docs' shell
// examples where their tools are missing.
func needShellTools(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found; scripts/install-tools.sh test installs it", tool)
		}
	}
}

// patchQueue changes queue q's settings through the admin API, as an
// operator does.
func patchQueue(t *testing.T, r *replica, q, body string) {
	t.Helper()
	req, err := http.NewRequest("PATCH", r.base+"/admin/v1/queues/"+q, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PATCH %s: %d", body, resp.StatusCode)
	}
}
