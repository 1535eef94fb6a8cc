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
	"unicode"

	"github.com/waitroom/waitroom/internal/testkit/wait"
)

// apiDoc holds the shell blocks that run as pasted, each after apiMark.
const (
	apiDoc  = "../../docs/API.md"
	apiMark = "<!-- TestAPIExamples runs this block -->"
)

// A step of a docs/API.md block: one command (continuation lines joined) and
// the example answer the doc shows under it, if any.
type readmeStep struct {
	cmd     string
	example string // the JSON of the "# {...}" comment lines after cmd
}

// readmeBlocks returns the steps of docs/API.md's marked blocks, in order.
func readmeBlocks(t *testing.T) [][]readmeStep {
	t.Helper()
	return docBlocks(t, apiDoc, apiMark)
}

// docBlocks returns the steps of the blocks of doc that follow mark, in
// order.
func docBlocks(t *testing.T, doc, mark string) [][]readmeStep {
	t.Helper()
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	var blocks [][]readmeStep
	lines := strings.Split(string(b), "\n")
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != mark {
			continue
		}
		if i+1 >= len(lines) || lines[i+1] != "```sh" {
			t.Fatalf("%s line %d: the mark is not followed by a sh block", docName(doc), i+1)
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

// docs/API.md's marked curl examples run as pasted against a real
// service, one after another in one directory (so enter.json carries
// over; PLACE_TOKEN and PASS are read within a block), every call answers
// 2xx, and every example answer under a call names only fields the service
// answers and, but for tickets, every top-level field it answers.
func TestAPIExamples(t *testing.T) {
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
			wait.For(t, 10*time.Second, "a history point", func() (bool, string) {
				var h struct{ Points []any }
				code := r.call(t, "GET", "/admin/v1/queues/"+q+"/history", adminToken, &h)
				return len(h.Points) > 0, fmt.Sprintf("status %d, %d points", code, len(h.Points))
			})
		}
		checkExamples(t, apiDoc, bi, steps, runAPIBlock(t, bi, steps, host, q, dir))
	}
	if len(readmeBlocks(t)) < 2 {
		t.Fatal("docs/API.md has fewer marked blocks than the users' and the admin's")
	}
}

// checkExamples checks the example answers of block bi of doc (its
// steps) against what the service answered (runDocBlock's outputs):
// every field an example shows is answered, and but for tickets every
// top-level field answered is shown.
func checkExamples(t *testing.T, doc string, bi int, steps []readmeStep, outputs []string) {
	t.Helper()
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
			t.Errorf("%s block %d, %q: the answer is not a JSON object: %q", docName(doc), bi+1, st.cmd, got)
			continue
		}
		shown, answered := keys(st.example), keys(got)
		for _, k := range shown {
			if !slices.Contains(answered, k) {
				t.Errorf("%s block %d, %q: the example shows %q, which the service does not answer (%s)", docName(doc), bi+1, st.cmd, k, strings.TrimSpace(got))
			}
		}
		for k := range top {
			// A ticket's fields depend on its status (pass only when
			// ENTERED): its example need not name them all.
			if _, ticket := top["status"]; ticket {
				break
			}
			if !slices.Contains(shown, k) {
				t.Errorf("%s block %d, %q: the service answers %q, which the example leaves out", docName(doc), bi+1, st.cmd, k)
			}
		}
	}
}

// runAPIBlock runs one docs/API.md block's steps as pasted, against the
// service at host and its queue q, in dir, and returns the output of each
// step (after the first, each begins with its number and "@@\n").
func runAPIBlock(t *testing.T, bi int, steps []readmeStep, host, q, dir string) []string {
	t.Helper()
	return runDocBlock(t, apiDoc, bi, steps, host, q, dir)
}

// docName is how a failure names doc: "docs/API.md".
func docName(doc string) string { return strings.TrimPrefix(doc, "../../") }

// runDocBlock is runAPIBlock for block bi of doc.
func runDocBlock(t *testing.T, doc string, bi int, steps []readmeStep, host, q, dir string) []string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var script strings.Builder
	script.WriteString("set -euo pipefail\n")
	for si, st := range steps {
		// As pasted, plus: fail the step on an HTTP error, and say it;
		// but an enter the next step may answer with a solution is
		// refused (403 challenge_required) as a matter of course.
		failing := "curl -sS --fail-with-body "
		if si+1 < len(steps) && strings.Contains(steps[si+1].cmd, "waitroom solve") {
			failing = "curl -sS "
		}
		cmd := strings.NewReplacer(
			"localhost:8080", host,
			"/queues/default", "/queues/"+q,
			"queue=default", "queue="+q,
			`$("$WR"/scripts/up.sh token)`, adminToken,
			// The reader's scratch directory: here the test's own, which
			// the next block must find enter.json in.
			`cd "$(mktemp -d)"`, "cd .",
			// The reader's waitroom from the checkout: this test binary,
			// which is the command's main (bounds_test.go).
			`go -C "$WR" run ./cmd/waitroom`, childEnv+"=1 "+exe,
			"curl -s ", failing,
		).Replace(st.cmd)
		fmt.Fprintf(&script, "%s\necho\necho '@@step %d@@'\n", cmd, si)
	}
	cmd := exec.Command("bash", "-c", script.String())
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s block %d: %v\n%s", docName(doc), bi+1, err, out)
	}
	return strings.Split(string(out), "@@step ")
}

// docs/API.md's users' block runs as pasted against a queue that asks
// for proof of work too: each enter is refused with challenge_required,
// and the next step pays it with `waitroom solve` and gets the place the
// rest of the block uses.
func TestAPIExamplesPayProofOfWork(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found; scripts/install-tools.sh test installs it", tool)
		}
	}
	q := fmt.Sprintf("readmepow%d", time.Now().UnixNano())
	r := startReplica(t, map[string]string{"WAITROOM_QUEUES": q, "WAITROOM_ADMIN_TOKEN": adminToken, "WAITROOM_REFILL_INTERVAL": "1s"})
	r.askProofOfWork(t, q, solveTestDifficulty)
	steps := readmeBlocks(t)[0]
	outputs := runAPIBlock(t, 0, steps, strings.TrimPrefix(r.base, "http://"), q, t.TempDir())
	var solved []string // the outputs of the steps that solve
	for si, st := range steps {
		if !strings.Contains(st.cmd, "waitroom solve") {
			continue
		}
		// outputs[si] is step si's (after the previous one's number).
		if !strings.Contains(outputs[si-1], `"challenge_required"`) {
			t.Errorf("docs/API.md, %q: answered %q, want a refusal with challenge_required", steps[si-1].cmd, outputs[si-1])
		}
		solved = append(solved, outputs[si])
	}
	if len(solved) != 2 {
		t.Fatalf("docs/API.md's users' block solves %d times, want 2 (its two enters)", len(solved))
	}
	for _, out := range solved {
		if !strings.Contains(out, `"status":"WAITING"`) && !strings.Contains(out, `"status":"ENTERED"`) {
			t.Errorf("docs/API.md: the enter with waitroom solve's body answered %q, want a place", out)
		}
	}
}

// archDoc holds the package diagram, after diagramMark.
const archDoc = "../../docs/ARCHITECTURE.md"

// diagramMark precedes docs/ARCHITECTURE.md's package diagram.
const diagramMark = "<!-- TestArchitectureDiagram checks this block: WAITROOM_UPDATE_DOCS=1 go test -run TestArchitectureDiagram ./cmd/waitroom/ rewrites it -->"

// modulePackages is each package of the module, by its path in the
// module ("internal/engine/queue", "gate", "lab/cmd/wr-adapt"), with the
// module's packages its non-test files import, by the same path.
func modulePackages(t *testing.T) map[string][]string {
	t.Helper()
	const module = "github.com/waitroom/waitroom/"
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
		deps := []string{}
		for _, imp := range pkg.Imports {
			if strings.HasPrefix(imp, module) {
				deps = append(deps, strings.TrimPrefix(imp, module))
			}
		}
		imports[filepath.ToSlash(rel)] = deps
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return imports
}

// packageImports is each package of the module (by its path in the
// module, "internal/" dropped) with the module's packages its non-test
// files import, in dependency order: a package comes after those it
// imports.
func packageImports(t *testing.T) []string {
	t.Helper()
	short := func(p string) string { return strings.TrimPrefix(p, "internal/") }
	imports := map[string][]string{}
	for p, deps := range modulePackages(t) {
		shortDeps := make([]string, 0, len(deps))
		for _, d := range deps {
			shortDeps = append(shortDeps, short(d))
		}
		slices.Sort(shortDeps)
		imports[short(p)] = shortDeps
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

// docs/ARCHITECTURE.md's package diagram is the code's: every package,
// and the module's packages each imports, lower layers first.
func TestArchitectureDiagram(t *testing.T) {
	b, err := os.ReadFile(archDoc)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	start := strings.Index(readme, diagramMark+"\n```\n")
	if start < 0 {
		t.Fatal("docs/ARCHITECTURE.md: no package diagram after the mark")
	}
	start += len(diagramMark + "\n```\n")
	end := strings.Index(readme[start:], "```\n")
	if end < 0 {
		t.Fatal("docs/ARCHITECTURE.md: the package diagram's block does not end")
	}
	want := strings.Join(packageImports(t), "\n") + "\n"
	if got := readme[start : start+end]; got != want {
		if os.Getenv("WAITROOM_UPDATE_DOCS") == "1" {
			if err := os.WriteFile(archDoc, []byte(readme[:start]+want+readme[start+end:]), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Fatalf("docs/ARCHITECTURE.md's package diagram is not the code's; run WAITROOM_UPDATE_DOCS=1 go test -run TestArchitectureDiagram ./cmd/waitroom/\nwant:\n%s", want)
	}
}

// mdLink is an inline Markdown link's target: [text](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// htmlAnchor is an explicit anchor: <a id="..."> or <a name="...">.
var htmlAnchor = regexp.MustCompile(`<a (?:id|name)="([^"]+)"`)

// docLines are a Markdown file's lines with fenced code blocks and
// inline code spans blanked, so a link is only what a reader can click.
func docLines(text string) []string {
	var out []string
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			line = ""
		}
		if fenced {
			out = append(out, "")
			continue
		}
		parts := strings.Split(line, "`")
		for i := 1; i < len(parts); i += 2 {
			parts[i] = ""
		}
		out = append(out, strings.Join(parts, "``"))
	}
	return out
}

// headingSlug is a Markdown heading's anchor on GitHub, before any
// numbering of a repeated one: lower case, punctuation dropped, spaces
// to hyphens.
func headingSlug(heading string) string {
	title := strings.TrimSpace(strings.TrimLeft(heading, "#"))
	var slug strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case r == ' ':
			slug.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			slug.WriteRune(r)
		}
	}
	return slug.String()
}

// anchors are the fragments a Markdown file answers to on GitHub: each
// heading's slug (lower case, punctuation dropped, spaces to hyphens, a
// repeated one numbered) and each explicit <a id>.
func anchors(text string) map[string]bool {
	set := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			set[m[1]] = true
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		s := headingSlug(line)
		if n := seen[s]; n > 0 {
			set[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			set[s] = true
		}
		seen[s]++
	}
	return set
}

// Every relative link in the README and docs/ leads to a file or
// directory of the repository, and a link to a Markdown heading to one
// that exists: the docs move often, and a dead link is found here, not
// by a reader.
func TestDocLinks(t *testing.T) {
	files := []string{"../../README.md"}
	err := filepath.WalkDir("../../docs", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for n, line := range docLines(string(b)) {
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				path, frag, _ := strings.Cut(target, "#")
				resolved := file
				if path != "" {
					resolved = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
				}
				where := fmt.Sprintf("%s (line %d): %s", strings.TrimPrefix(file, "../../"), n+1, target)
				if _, err := os.Stat(resolved); err != nil {
					t.Errorf("%s: no such file", where)
					continue
				}
				if frag == "" || !strings.HasSuffix(resolved, ".md") {
					continue
				}
				doc, err := os.ReadFile(resolved)
				if err != nil {
					t.Fatal(err)
				}
				if !anchors(string(doc))[frag] {
					t.Errorf("%s: no heading #%s there", where, frag)
				}
			}
		}
	}
}
