package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// maxStrippedSize bounds the service's binary built with -s -w.
const maxStrippedSize = 24_000_000

// TestBinarySize builds the service once, stripped, and fails when it
// outgrows maxStrippedSize or when anything in it calls a method by a
// name known only at run time (reflect's Method or MethodByName, as
// text/template does): the linker then keeps every exported method of
// every type, some 7 MB here. -dumpdep prints the linker's reachability
// graph, marking such callers <ReflectMethod>.
func TestBinarySize(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "waitroom")
	cmd := exec.Command("go", "build", "-ldflags=-s -w -dumpdep", "-o", bin, ".")
	var graph bytes.Buffer
	cmd.Stderr = &graph
	if err := cmd.Run(); err != nil {
		t.Fatalf("go build: %v", err)
	}
	fi, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stripped binary: %d bytes", fi.Size())
	if fi.Size() > maxStrippedSize {
		t.Errorf("stripped binary is %d bytes, over %d: measure with go tool nm -size -sort size", fi.Size(), maxStrippedSize)
	}
	for line := range bytes.Lines(graph.Bytes()) {
		if bytes.Contains(line, []byte("<ReflectMethod>")) {
			t.Errorf("a method is called by a run-time name, so the linker keeps every method: %s", bytes.TrimSpace(line))
		}
	}
}
