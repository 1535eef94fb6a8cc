// Package scripts holds tests of the shell scripts.
package scripts

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// upToken runs `scripts/up.sh token` with its state in dir.
func upToken(t *testing.T, dir string, env ...string) (stdout, stderr string) {
	t.Helper()
	cmd := exec.Command("bash", "up.sh", "token")
	cmd.Env = append(os.Environ(), "WAITROOM_ADMIN_TOKEN=", "WAITROOM_STATE_DIR="+dir)
	cmd.Env = append(cmd.Env, env...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("up.sh token: %v\n%s", err, errOut.String())
	}
	// One line: the token and a newline, so a terminal's prompt starts
	// on the next line.
	if s := out.String(); !strings.HasSuffix(s, "\n") || strings.Count(s, "\n") != 1 {
		t.Fatalf("up.sh token printed %q, want one line ending in a newline", s)
	}
	return strings.TrimSpace(out.String()), errOut.String()
}

// The admin token up.sh makes: 32 random bytes in hex, in a file only its
// owner reads, made once and then reused; another checkout gets another.
func TestUpAdminToken(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state")
	token, notice := upToken(t, dir)
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(token) {
		t.Fatalf("token %q, want 64 hex digits", token)
	}
	if !strings.Contains(notice, "made a new admin token") {
		t.Errorf("first run said %q, want that it made a token", notice)
	}
	file := filepath.Join(dir, "admin-token")
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", fi.Mode().Perm())
	}
	if di, _ := os.Stat(dir); di.Mode().Perm() != 0o700 {
		t.Errorf("state dir mode %v, want 0700", di.Mode().Perm())
	}
	if b, _ := os.ReadFile(file); string(b) != token {
		t.Errorf("file holds %q, printed %q", b, token)
	}
	if _, err := os.Stat(file + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("temporary file left behind: %v", err)
	}

	again, notice := upToken(t, dir)
	if again != token || notice != "" {
		t.Fatalf("second run: %q (%q), want the same token, made silently", again, notice)
	}
	if other, _ := upToken(t, t.TempDir()); other == token {
		t.Fatal("two state dirs got one token")
	}
	if set, _ := upToken(t, dir, "WAITROOM_ADMIN_TOKEN=mine"); set != "mine" {
		t.Fatalf("with WAITROOM_ADMIN_TOKEN set: %q", set)
	}
}

// TestUpEnvFile: compose passes the service's other settings from an env
// file, which up.sh makes empty (this user's only) when it is missing and
// never overwrites; the README names it.
func TestUpEnvFile(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state")
	upToken(t, dir)
	file := filepath.Join(dir, "waitroom.env")
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("env file: %d bytes, mode %v; want empty, 0600", fi.Size(), fi.Mode().Perm())
	}
	if err := os.WriteFile(file, []byte("WAITROOM_MAX_ACTIVE=500\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	upToken(t, dir)
	if b, _ := os.ReadFile(file); string(b) != "WAITROOM_MAX_ACTIVE=500\n" {
		t.Fatalf("up.sh changed the env file: %q", b)
	}
	own := filepath.Join(t.TempDir(), "mine.env")
	upToken(t, dir, "WAITROOM_ENV_FILE="+own)
	if _, err := os.Stat(own); err != nil {
		t.Fatalf("WAITROOM_ENV_FILE not made: %v", err)
	}

	compose, _ := os.ReadFile("../docker-compose.yml")
	if !strings.Contains(string(compose), "env_file:\n      - ${WAITROOM_ENV_FILE:-.waitroom/waitroom.env}") {
		t.Error("docker-compose.yml does not pass the replicas .waitroom/waitroom.env (env_file)")
	}
	readme, _ := os.ReadFile("../README.md")
	if !strings.Contains(string(readme), ".waitroom/waitroom.env") {
		t.Error("README.md does not name the env file")
	}
}

// No default token is left in what ships: compose, the scripts, the docs.
func TestNoDefaultAdminToken(t *testing.T) {
	t.Parallel()
	for _, f := range []string{"../docker-compose.yml", "up.sh", "../README.md"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "change-me") {
			t.Errorf("%s still has the default token change-me", f)
		}
	}
	b, _ := os.ReadFile("../docker-compose.yml")
	if !strings.Contains(string(b), "WAITROOM_ADMIN_TOKEN: ${WAITROOM_ADMIN_TOKEN:-}") {
		t.Error("docker-compose.yml: the admin token must come from WAITROOM_ADMIN_TOKEN, with no fallback")
	}
}

// The whole stack as scripts/up.sh starts it, in a project of its own (its
// own name, port, subnet and token): the load balancer reaches every
// replica, the demo order page opens through the gate, and the documented
// pass-through scales the replicas. Needs Docker; about a minute once the
// service image's build is cached (it is compiled on the host).
func TestUpLoadBalancedStack(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the compose stack")
	}
	if err := exec.Command("docker", "info").Run(); err != nil {
		t.Skipf("needs Docker: %v", err)
	}
	state := t.TempDir()
	env := append(os.Environ(),
		"COMPOSE_PROJECT_NAME="+fmt.Sprintf("waitroom-uptest-%d", os.Getpid()),
		"WAITROOM_PORT="+freePort(t),
		"DEMO_SHOP_PORT="+freePort(t),
		// Not the default 172.30.78.0/24, so a developer's own stack can run.
		"WAITROOM_SUBNET=172.30.77.0/24",
		"WAITROOM_STATE_DIR="+state,
		"WAITROOM_ADMIN_TOKEN=",
	)
	up := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "bash", append([]string{"up.sh"}, args...)...)
		cmd.Env = env
		start := time.Now()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("up.sh %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		t.Logf("up.sh %s: %.1fs", strings.Join(args, " "), time.Since(start).Seconds())
		return string(out)
	}
	t.Cleanup(func() { up("down", "-v") })
	out := up()
	if !strings.Contains(out, "waitroom is ready: 3 replicas behind the load balancer") {
		t.Fatalf("up.sh said:\n%s", out)
	}
	// One line per image, saying what is in it; docker build's own output
	// (the classic builder's deprecation banner) only on a failure.
	if !regexp.MustCompile(`(?m)^built waitroom/waitroom:local \(waitroom and demo-order, .+\)$`).MatchString(out) ||
		strings.Contains(out, "DEPRECATED") || strings.Contains(out, "sha256") {
		t.Errorf("up.sh's build lines:\n%s", out)
	}
	var base string
	for _, kv := range env {
		if p, ok := strings.CutPrefix(kv, "WAITROOM_PORT="); ok {
			base = "http://localhost:" + p
		}
	}

	// Every replica answers: the load balancer logs which one did.
	reachesAll := func(replicas int) {
		t.Helper()
		seen := map[string]bool{}
		for i := 0; i < 50*replicas && len(seen) < replicas; i++ {
			resp, err := http.Get(base + "/readyz")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("readyz through the load balancer: %s", resp.Status)
			}
			if i%replicas == replicas-1 {
				seen = upstreams(t, up("logs", "--no-color", "lb"))
			}
		}
		if len(seen) != replicas {
			t.Fatalf("requests reached %d replicas (%v), want %d", len(seen), seen, replicas)
		}
	}
	reachesAll(3)

	// The demo order page, through the gate: sent to the waiting room
	// without a pass, let in with one.
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	resp, err := client.Post(base+"/api/v1/queues/default/enter", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	var ticket struct {
		Status string
		UserID string `json:"user_id"`
		Pass   string
	}
	err = json.NewDecoder(resp.Body).Decode(&ticket)
	resp.Body.Close()
	if err != nil || ticket.Status != "ENTERED" || ticket.Pass == "" {
		t.Fatalf("enter: %s %+v %v, want ENTERED with a pass", resp.Status, ticket, err)
	}
	resp, err = client.Get(base + "/?wr_pass=" + url.QueryEscape(ticket.Pass))
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// The page names the member the pass was issued to.
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), `<code id="sub">`+ticket.UserID+`</code>`) {
		t.Fatalf("order page with a pass: %s %q", resp.Status, page)
	}
	noPass := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err = noPass.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != "/q/default?return=%2F" {
		t.Fatalf("order page without a pass: %s to %q, want 303 to the waiting page", resp.Status, loc)
	}

	// The replicas see the client the load balancer saw, not the load
	// balancer, and not what the client claims: the audit log of an admin
	// call records the address its rate limits and lockout key on.
	token, err := os.ReadFile(filepath.Join(state, "admin-token"))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("PUT", base+"/admin/v1/queues/default/refill-size", strings.NewReader(`{"refill_size":12}`))
	req.Header.Set("Authorization", "Bearer "+string(token))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Forwarded-For", "198.51.100.7")
	if resp, err = client.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("admin call: %s", resp.Status)
	}
	req, _ = http.NewRequest("GET", base+"/admin/v1/queues/default/audit?limit=1", nil)
	req.Header.Set("Authorization", "Bearer "+string(token))
	if resp, err = client.Do(req); err != nil {
		t.Fatal(err)
	}
	var audit struct {
		Entries []struct {
			ClientIP string `json:"client_ip"`
		}
	}
	err = json.NewDecoder(resp.Body).Decode(&audit)
	resp.Body.Close()
	if err != nil || len(audit.Entries) != 1 {
		t.Fatalf("audit: %s %+v %v", resp.Status, audit, err)
	}
	m := regexp.MustCompile(`(?m)\| (\S+) \[[^]]*\] "PUT /admin/v1/queues/default/refill-size"`).FindStringSubmatch(up("logs", "--no-color", "lb"))
	if m == nil {
		t.Fatal("the load balancer did not log the admin call")
	}
	if got := audit.Entries[0].ClientIP; got != m[1] {
		t.Errorf("the replica saw the client as %s, the load balancer as %s", got, m[1])
	}

	// The documented pass-through: more replicas, all reached.
	up("up", "-d", "--scale", "waitroom=4")
	reachesAll(4)
}

// upstreams returns the replica addresses in the load balancer's log.
func upstreams(t *testing.T, log string) map[string]bool {
	t.Helper()
	seen := map[string]bool{}
	for _, m := range regexp.MustCompile(`upstream=([0-9.]+:8080)`).FindAllStringSubmatch(log, -1) {
		seen[m[1]] = true
	}
	return seen
}

// freePort is a TCP port on the host that nothing listens on (now).
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// release.sh, in a copy of a repository: Unreleased becomes the version's
// section, dated, under a new empty Unreleased; the commit is tagged; the
// build's version (git describe) is the tag. A second run of the same
// version, a version that is not semantic and an empty Unreleased are
// refused and change nothing.
func TestRelease(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not found")
	}
	dir := t.TempDir()
	script, err := os.ReadFile("release.sh")
	if err != nil {
		t.Fatal(err)
	}
	run := func(name string, args ...string) (string, error) {
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	must := func(name string, args ...string) string {
		t.Helper()
		out, err := run(name, args...)
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return out
	}
	must("git", "init", "-q", "-b", "main")
	if err := os.MkdirAll(filepath.Join(dir, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "scripts", "release.sh"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	changelog := "# Changelog\n\n## [Unreleased]\n\n### Added\n\n- a thing\n"
	if err := os.WriteFile(filepath.Join(dir, "CHANGELOG.md"), []byte(changelog), 0o644); err != nil {
		t.Fatal(err)
	}
	must("git", "add", "-A")
	must("git", "commit", "-q", "-m", "start")

	for _, bad := range []string{"", "1.2", "v1.2.3", "01.2.3", "1.2.3-rc1"} {
		if out, err := run("bash", "scripts/release.sh", bad); err == nil {
			t.Errorf("release.sh %q: accepted\n%s", bad, out)
		}
	}
	must("bash", "scripts/release.sh", "0.9.0")
	got, err := os.ReadFile(filepath.Join(dir, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	want := regexp.MustCompile(`(?s)^# Changelog\n\n## \[Unreleased\]\n\n## \[0\.9\.0\] - \d{4}-\d\d-\d\d\n\n### Added\n\n- a thing\n$`)
	if !want.Match(got) {
		t.Errorf("CHANGELOG.md after the release:\n%s", got)
	}
	if d := strings.TrimSpace(must("git", "describe", "--tags")); d != "v0.9.0" {
		t.Errorf("git describe: %q, want v0.9.0", d)
	}
	head := must("git", "rev-parse", "HEAD")
	for _, again := range []string{"0.9.0", "0.9.1"} { // the tag exists; then nothing unreleased
		if out, err := run("bash", "scripts/release.sh", again); err == nil {
			t.Errorf("release.sh %s: accepted\n%s", again, out)
		}
	}
	if now := must("git", "rev-parse", "HEAD"); now != head {
		t.Error("a refused release changed the history")
	}
}
