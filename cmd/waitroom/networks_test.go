package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The operator's round trip with the shipped samples: build a networks
// file, then check it; and the ways the command is misused.
func TestNetworksCommand(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "networks.txt")
	samples := "../../deploy/networks/"
	run := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := networksCommand(args, &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}

	code, _, stderr := run("build", "-classes", samples+"sample-asn-classes.txt", "-o", out, samples+"sample-ip2asn.tsv")
	if code != 0 {
		t.Fatalf("build: exit %d: %s", code, stderr)
	}
	built, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(samples + "sample-networks.txt")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(built, want) {
		t.Errorf("built file differs from the committed sample:\n%s", built)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	code, stdout, _ := run("build", "-classes", samples+"sample-asn-classes.txt", samples+"sample-ip2asn.tsv")
	if code != 0 || stdout != string(want) {
		t.Errorf("build to standard output: exit %d:\n%s", code, stdout)
	}

	code, stdout, stderr = run("check", out)
	if code != 0 || stdout != out+": 27 prefixes: shared 7, hosting 20, default 0\n" {
		t.Errorf("check: exit %d: %q %q", code, stdout, stderr)
	}

	bad := filepath.Join(dir, "bad.txt")
	if err := os.WriteFile(bad, []byte("# ok\n10.0.0.1/8 shared\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = run("check", bad)
	if code != 1 || !strings.Contains(stderr, bad+":2: netclass: prefix has host bits set") {
		t.Errorf("check of a bad file: exit %d: %s", code, stderr)
	}
	code, _, stderr = run("build", "-classes", bad, "-o", filepath.Join(dir, "never.txt"), samples+"sample-ip2asn.tsv")
	if _, err := os.Stat(filepath.Join(dir, "never.txt")); code != 1 || err == nil || !strings.Contains(stderr, bad+":2: ") {
		t.Errorf("build from a bad class list: exit %d, %v: %s", code, err, stderr)
	}

	for _, args := range [][]string{nil, {"nonsense"}, {"check"}, {"build", samples + "sample-ip2asn.tsv"}, {"build", "-classes", bad}, {"build", "-x"}} {
		if code, _, stderr := run(args...); code != 2 || !strings.Contains(stderr, "usage:") {
			t.Errorf("%q: exit %d: %s", args, code, stderr)
		}
	}
}
