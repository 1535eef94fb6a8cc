package main

import (
	"fmt"
	"go/build"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// packagesMark precedes docs/ARCHITECTURE.md's list of what each package
// owns, which is made from the code: each package's own doc comment,
// under the folder that groups it.
const packagesMark = "<!-- TestArchitecturePackages checks this block: WAITROOM_UPDATE_DOCS=1 go test -run TestArchitecturePackages ./cmd/waitroom/ rewrites it -->"

// groups says what each folder of packages serves, in the order the list
// shows them. A package is under the longest folder here that holds it;
// one under none fails the test, so a new folder gets its line.
var groups = []struct{ dir, serves string }{
	{"cmd", "the commands: the service, the soak check, the demo order page"},
	{"internal/config", "the service's settings, read from the environment once and validated"},
	{"internal/infra", "infrastructure: the Redis client, the Redis keys, the version"},
	{"internal/engine", "the engine: each queue's line, held places and admissions in Redis, and the tick that moves them"},
	{"internal/trust", "trust: who holds a place, entry passes, proof of work, human checks, moving a place to another device, invitation codes"},
	{"internal/hygiene", "request hygiene: the client's address and network, other sites, paths, strict JSON, open connections"},
	{"internal/web", "the HTTP faces: the public queue API and its pages, the admin API, their shared plumbing and the one router"},
	{"internal/gate", "waitroom's own gate: the reverse proxy and forward auth, what it let through while Redis was away, and the order page's commands"},
	{"internal/backoffice", "the back office's rules and records: who made a change, roles, sign-ins, API tokens, the audit log, lockout, settings changes"},
	{"internal/ops", "operations: metrics, webhooks, the automatic rate, the forecast, what people paid, bounded logs"},
	{"internal/testkit", "test kits, and the suites that need the whole stack (browser, nginx, failover, soak)"},
	{"gate", "the public Go middleware an order page puts in front of itself"},
	{"client", "the public Go client of the queue API, for apps and backends that wait in line"},
	{"api", "the HTTP contract"},
	{"docs", "the docs' examples that are Go: the pass verification example, run against a live waitroom"},
	{"web", "the pages' files, embedded"},
	{"lab", "the lab (a module of its own): measures at a million and more"},
	{"scripts", "the scripts' Go: their tests, and the bare server the benchmarks measure waitroom against"},
	{"deploy", "the shipped configurations' Go: the Helm chart's tests (a module of its own)"},
}

// packageList is docs/ARCHITECTURE.md's list of the packages: a line per
// group, then one per package with its doc comment's first sentence.
func packageList(t *testing.T) string {
	t.Helper()
	byGroup := map[string][]string{}
	for p := range modulePackages(t) {
		g := ""
		for _, gr := range groups {
			if (p == gr.dir || strings.HasPrefix(p, gr.dir+"/")) && len(gr.dir) > len(g) {
				g = gr.dir
			}
		}
		if g == "" {
			t.Errorf("package %s is in no group of cmd/waitroom's packages_test.go: give its folder a line", p)
			continue
		}
		byGroup[g] = append(byGroup[g], p)
	}
	var sb strings.Builder
	for _, gr := range groups {
		pkgs := byGroup[gr.dir]
		if len(pkgs) == 0 {
			continue
		}
		slices.Sort(pkgs)
		fmt.Fprintf(&sb, "%s/  %s\n", gr.dir, gr.serves)
		for _, p := range pkgs {
			synopsis := packageDoc(t, p)
			if synopsis == "" {
				t.Errorf("package %s has no doc comment: say what it owns in one sentence", p)
			}
			name := strings.TrimPrefix(p, gr.dir+"/")
			if name == p {
				name = "."
			}
			fmt.Fprintf(&sb, "  %-22s %s\n", name, synopsis)
		}
	}
	return sb.String()
}

// packageDoc is the first sentence of the doc comment of the package in
// dir (from the module's root), or of its test files' when it has only
// tests.
func packageDoc(t *testing.T, dir string) string {
	t.Helper()
	dir = filepath.Join("../..", dir)
	pkg, err := build.ImportDir(dir, 0)
	if err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	if pkg.Doc != "" || len(pkg.GoFiles) > 0 {
		return strings.TrimSpace(pkg.Doc)
	}
	for _, name := range pkg.TestGoFiles {
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, name), nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if f.Doc != nil {
			return doc.Synopsis(f.Doc.Text())
		}
	}
	return ""
}

// docs/ARCHITECTURE.md's list of what each package owns is the code's:
// each package's doc comment, grouped by the folder that holds it.
func TestArchitecturePackages(t *testing.T) {
	doc := readDoc(t, archDoc)
	start := strings.Index(doc, packagesMark+"\n```\n")
	if start < 0 {
		t.Fatal("docs/ARCHITECTURE.md: no package list after the mark")
	}
	start += len(packagesMark + "\n```\n")
	end := strings.Index(doc[start:], "```\n")
	if end < 0 {
		t.Fatal("docs/ARCHITECTURE.md: the package list's block does not end")
	}
	want := packageList(t)
	if got := doc[start : start+end]; got != want {
		if os.Getenv("WAITROOM_UPDATE_DOCS") == "1" {
			if err := os.WriteFile(archDoc, []byte(doc[:start]+want+doc[start+end:]), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Fatalf("docs/ARCHITECTURE.md's package list is not the code's; run WAITROOM_UPDATE_DOCS=1 go test -run TestArchitecturePackages ./cmd/waitroom/\nwant:\n%s", want)
	}
}
