package main

import (
	"encoding/json"
	"fmt"
	"go/build"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// readmeMark precedes the README's shell blocks that run as pasted.
const readmeMark = "<!-- TestReadmeExamples runs this block -->"

// A step of a README block: one command (continuation lines joined) and
// the example answer the README shows under it, if any.
type readmeStep struct {
	cmd     string
	example string // the JSON of the "# {...}" comment lines after cmd
}

// readmeBlocks returns the steps of the marked blocks, in order.
func readmeBlocks(t *testing.T) [][]readmeStep {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var blocks [][]readmeStep
	lines := strings.Split(string(b), "\n")
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != readmeMark {
			continue
		}
		if i+1 >= len(lines) || lines[i+1] != "```sh" {
			t.Fatalf("README line %d: the mark is not followed by a sh block", i+1)
		}
		var steps []readmeStep
		inExample := false
		for i += 2; i < len(lines) && lines[i] != "```"; i++ {
			line := lines[i]
			switch {
			case strings.HasPrefix(line, "# {") || inExample && strings.HasPrefix(line, "#  "):
				steps[len(steps)-1].example += strings.TrimPrefix(line, "#")
				inExample = true
			case strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "":
				inExample = false
			default:
				inExample = false
				cmd := line
				for strings.HasSuffix(cmd, "\\") && i+1 < len(lines) {
					i++
					cmd = strings.TrimSuffix(cmd, "\\") + " " + strings.TrimSpace(lines[i])
				}
				steps = append(steps, readmeStep{cmd: cmd})
			}
		}
		blocks = append(blocks, steps)
	}
	return blocks
}

var jsonKey = regexp.MustCompile(`"([A-Za-z_][A-Za-z0-9_]*)":`)

// keys are the object keys named in a JSON text or example.
func keys(s string) []string {
	var ks []string
	for _, m := range jsonKey.FindAllStringSubmatch(s, -1) {
		ks = append(ks, m[1])
	}
	slices.Sort(ks)
	return slices.Compact(ks)
}

// The README's marked curl examples run as pasted against a real service,
// one after another in one shell (so PLACE_TOKEN and PASS carry over),
// every call answers 2xx, and every example answer under a call names
// only fields the service answers and, but for tickets, every top-level
// field it answers.
func TestReadmeExamples(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s not found: scripts/install-tools.sh test installs it", tool)
			}
			t.Skipf("%s not found; scripts/install-tools.sh test installs it", tool)
		}
	}
	q := fmt.Sprintf("readme%d", time.Now().UnixNano())
	r := startReplica(t, map[string]string{"WAITROOM_QUEUES": q, "WAITROOM_ADMIN_TOKEN": adminToken, "WAITROOM_REFILL_INTERVAL": "1s"})
	host := strings.TrimPrefix(r.base, "http://")
	dir := t.TempDir()
	for bi, steps := range readmeBlocks(t) {
		if bi == 1 {
			// The admin block shows a history point: wait for the first
			// interval to end, as a reader who took a minute would have.
			var h struct{ Points []any }
			for deadline := time.Now().Add(10 * time.Second); len(h.Points) == 0; time.Sleep(100 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("no history point after 10 s")
				}
				r.call(t, "GET", "/admin/v1/queues/"+q+"/history", adminToken, &h)
			}
		}
		var script strings.Builder
		script.WriteString("set -euo pipefail\n")
		for si, st := range steps {
			cmd := strings.NewReplacer(
				"localhost:8080", host,
				"/queues/default", "/queues/"+q,
				"queue=default", "queue="+q,
				"$(scripts/up.sh token)", adminToken,
				// As pasted, plus: fail the step on an HTTP error, and say it.
				"curl -s ", "curl -sS --fail-with-body ",
			).Replace(st.cmd)
			fmt.Fprintf(&script, "%s\necho\necho '@@step %d@@'\n", cmd, si)
		}
		cmd := exec.Command("bash", "-c", script.String())
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("README block %d: %v\n%s", bi+1, err, out)
		}
		outputs := strings.Split(string(out), "@@step ")
		for si, st := range steps {
			if st.example == "" {
				continue
			}
			got := outputs[si]
			if si > 0 {
				_, got, _ = strings.Cut(got, "@@\n")
			}
			var top map[string]json.RawMessage
			if err := json.Unmarshal([]byte(strings.TrimSpace(got)), &top); err != nil {
				t.Errorf("README block %d, %q: the answer is not a JSON object: %q", bi+1, st.cmd, got)
				continue
			}
			shown, answered := keys(st.example), keys(got)
			for _, k := range shown {
				if !slices.Contains(answered, k) {
					t.Errorf("README block %d, %q: the example shows %q, which the service does not answer (%s)", bi+1, st.cmd, k, strings.TrimSpace(got))
				}
			}
			for k := range top {
				// A ticket's fields depend on its status (pass only when
				// ENTERED): its example need not name them all.
				if _, ticket := top["status"]; ticket {
					break
				}
				if !slices.Contains(shown, k) {
					t.Errorf("README block %d, %q: the service answers %q, which the example leaves out", bi+1, st.cmd, k)
				}
			}
		}
	}
	if len(readmeBlocks(t)) < 2 {
		t.Fatal("the README has fewer marked blocks than the users' and the admin's")
	}
}

// diagramMark precedes the README's package diagram.
const diagramMark = "<!-- TestArchitectureDiagram checks this block: WAITROOM_UPDATE_DOCS=1 go test -run TestArchitectureDiagram ./cmd/waitroom/ rewrites it -->"

// packageImports is each package of the module (by its path in the
// module, "internal/" dropped) with the module's packages its non-test
// files import, in dependency order: a package comes after those it
// imports.
func packageImports(t *testing.T) []string {
	t.Helper()
	const module = "github.com/waitroom/waitroom/"
	short := func(p string) string { return strings.TrimPrefix(strings.TrimPrefix(p, module), "internal/") }
	imports := map[string][]string{}
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "artifacts" || d.Name() == "testdata") && path != "../.." {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			return nil
		}
		pkg, err := build.ImportDir(path, 0)
		if err != nil {
			return nil // no Go files here
		}
		rel, _ := filepath.Rel("../..", path)
		name := short(filepath.ToSlash(rel))
		deps := []string{}
		for _, imp := range pkg.Imports {
			if strings.HasPrefix(imp, module) {
				deps = append(deps, short(imp))
			}
		}
		slices.Sort(deps)
		imports[name] = deps
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	done := map[string]bool{}
	var visit func(string)
	visit = func(p string) {
		if done[p] {
			return
		}
		done[p] = true
		for _, d := range imports[p] {
			visit(d)
		}
		order = append(order, p)
	}
	names := make([]string, 0, len(imports))
	for p := range imports {
		names = append(names, p)
	}
	slices.Sort(names)
	for _, p := range names {
		visit(p)
	}
	lines := make([]string, 0, len(order))
	for _, p := range order {
		line := fmt.Sprintf("%-18s", p)
		if deps := imports[p]; len(deps) > 0 {
			line += " → " + strings.Join(deps, ", ")
		}
		lines = append(lines, strings.TrimRight(line, " "))
	}
	return lines
}

// The README's package diagram is the code's: every package, and the
// module's packages each imports, lower layers first.
func TestArchitectureDiagram(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	start := strings.Index(readme, diagramMark+"\n```\n")
	if start < 0 {
		t.Fatal("README: no package diagram after the mark")
	}
	start += len(diagramMark + "\n```\n")
	end := strings.Index(readme[start:], "```\n")
	if end < 0 {
		t.Fatal("README: the package diagram's block does not end")
	}
	want := strings.Join(packageImports(t), "\n") + "\n"
	if got := readme[start : start+end]; got != want {
		if os.Getenv("WAITROOM_UPDATE_DOCS") == "1" {
			if err := os.WriteFile("../../README.md", []byte(readme[:start]+want+readme[start+end:]), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Fatalf("README's package diagram is not the code's; run WAITROOM_UPDATE_DOCS=1 go test -run TestArchitectureDiagram ./cmd/waitroom/\nwant:\n%s", want)
	}
}
