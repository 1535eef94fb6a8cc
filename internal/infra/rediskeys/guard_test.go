package rediskeys

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// spellings are the ways a key was spelled by hand before this package:
// a literal "wr:" name (Go or Lua quotes), the old queue.KeyPrefix, and a
// string that continues a hash tag ("}:...").
var spellings = []string{`"wr:`, `'wr:`, `KeyPrefix(`, `"}:`}

// TestNoKeySpelledElsewhere fails when a Go or Lua source of the service
// outside this package spells a key name: ask a builder here instead.
// Tests are not searched: they may spell names on purpose, to pin them.
func TestNoKeySpelledElsewhere(t *testing.T) {
	root := moduleRoot(t)
	self, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == self || (path != root && strings.HasPrefix(d.Name(), ".")) || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if !(strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go")) && !strings.HasSuffix(path, ".lua") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for n, line := range strings.Split(string(src), "\n") {
			for _, s := range spellings {
				if strings.Contains(line, s) {
					rel, _ := filepath.Rel(root, path)
					t.Errorf("%s:%d spells a Redis key (%s): use internal/infra/rediskeys", rel, n+1, s)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
