// Package scripts holds tests of the shell scripts that can run without
// Docker.
package scripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
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
