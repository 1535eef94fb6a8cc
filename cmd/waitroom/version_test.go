package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

func TestVersionCommand(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := versionCommand(nil, &stdout, &stderr); code != 0 || stderr.Len() != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
	// A test binary has no version set at link time: "devel", with the
	// commit when Go recorded one (internal/infra/version tests the rest).
	if !regexp.MustCompile(`^waitroom (v\S+|devel(-[0-9a-f]+(\+dirty)?)?) \(go\S+, [a-z0-9]+/[a-z0-9]+\)\n$`).MatchString(stdout.String()) {
		t.Errorf("prints %q", stdout.String())
	}

	stdout.Reset()
	stderr.Reset()
	if code := versionCommand([]string{"-v"}, &stdout, &stderr); code != 2 || stdout.Len() != 0 || !strings.Contains(stderr.String(), "usage: waitroom version") {
		t.Errorf("with an argument: exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
}
