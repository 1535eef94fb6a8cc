package rediskeys

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The block of docs/ARCHITECTURE.md that Table fills.
const (
	beginKeys = "<!-- BEGIN KEYS: generated from internal/infra/rediskeys, WAITROOM_UPDATE_DOCS=1 go test ./internal/infra/rediskeys -->"
	endKeys   = "<!-- END KEYS -->"
)

// table renders All as the docs' Markdown table.
func table() string {
	var b strings.Builder
	b.WriteString("| key | type | owner | holds |\n|---|---|---|---|\n")
	for _, k := range All() {
		owner := strings.TrimPrefix(k.Owner, "internal/")
		doc := strings.ReplaceAll(k.Doc, "|", `\|`)
		b.WriteString("| `" + k.Pattern + "` | " + k.Type + " | " + owner + " | " + doc + " |\n")
	}
	return b.String()
}

// TestDocsKeyTable checks the key table of docs/ARCHITECTURE.md against
// the registry; with WAITROOM_UPDATE_DOCS=1 it rewrites the table instead.
func TestDocsKeyTable(t *testing.T) {
	path := filepath.Join(moduleRoot(t), "docs", "ARCHITECTURE.md")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i := strings.Index(doc, beginKeys)
	j := strings.Index(doc, endKeys)
	if i < 0 || j < i {
		t.Fatalf("%s: no block between %q and %q", path, beginKeys, endKeys)
	}
	start := i + len(beginKeys) + 1 // after the marker's line
	want := table()
	if doc[start:j] == want {
		return
	}
	if os.Getenv("WAITROOM_UPDATE_DOCS") != "1" {
		t.Fatalf("%s: the key table is not the registry's; run WAITROOM_UPDATE_DOCS=1 go test ./internal/infra/rediskeys", path)
	}
	if err := os.WriteFile(path, []byte(doc[:start]+want+doc[j:]), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: key table rewritten", path)
}

// moduleRoot is the directory of the go.mod above this package.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the package")
		}
		dir = up
	}
}
