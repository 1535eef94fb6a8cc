package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// What keeps the docs a newcomer reads honest: the README short enough to
// read, its contents list whole, its two commands the ones that run, its
// prerequisites what the scripts install, and every Lua script and
// package named in the docs that describe them.

const (
	readmePath = "../../README.md"
	// readmeMaxLines is the README's budget: past it, a reference section
	// moves to docs/ and leaves a summary and a link.
	readmeMaxLines = 700
)

// readDoc is a file of the repository as text.
func readDoc(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestDocsReadmeLength(t *testing.T) {
	n := strings.Count(strings.TrimSuffix(readDoc(t, readmePath), "\n"), "\n") + 1
	if n > readmeMaxLines {
		t.Errorf("README.md has %d lines, more than %d: move a reference section to docs/ and leave a summary and a link", n, readmeMaxLines)
	}
}

// contentsLink is a list item's link to a heading of the same file.
var contentsLink = regexp.MustCompile(`^- \[[^\]]*\]\(#([^)]+)\)`)

// The README's "Contents" lists every ## section that follows it (the
// ones above it are read on the way there), in order.
func TestDocsReadmeContents(t *testing.T) {
	lines := docLines(readDoc(t, readmePath))
	start := slices.Index(lines, "## Contents")
	if start < 0 {
		t.Fatal("README.md: no ## Contents")
	}
	var listed, sections []string
	inList := true
	for _, line := range lines[start+1:] {
		if inList {
			if m := contentsLink.FindStringSubmatch(line); m != nil {
				listed = append(listed, m[1])
				continue
			}
			if len(listed) > 0 && strings.TrimSpace(line) == "" {
				inList = false
			}
		}
		if strings.HasPrefix(line, "## ") {
			inList = false
			sections = append(sections, headingSlug(line))
		}
	}
	if !slices.Equal(listed, sections) {
		t.Errorf("README.md's Contents lists\n\t%s\nbut its sections after it are\n\t%s", strings.Join(listed, "\n\t"), strings.Join(sections, "\n\t"))
	}
}

// The README's quick start is two commands, the service and the tests,
// and CI runs the same test command.
func TestDocsReadmeTwoCommands(t *testing.T) {
	block := blockAfter(t, readDoc(t, readmePath), "README.md", "\n## Quick start\n", "```sh\n")
	var cmds []string
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		cmd, _, _ := strings.Cut(line, "#")
		cmds = append(cmds, strings.TrimSpace(cmd))
	}
	if want := []string{"scripts/up.sh", "scripts/test.sh"}; !slices.Equal(cmds, want) {
		t.Errorf("README.md's quick start runs %q, want %q", cmds, want)
	}
	if ci := readDoc(t, "../../.ci/run"); !strings.Contains(ci, "\nexec scripts/test.sh\n") {
		t.Errorf(".ci/run does not run the README's test command, scripts/test.sh:\n%s", ci)
	}
}

// toolNames are what scripts/install-tools.sh installs: the Debian
// packages it asks apt for, and the pinned versions it builds.
var toolNames = []*regexp.Regexp{
	regexp.MustCompile(`(?m)^\s*need_pkg ([a-z0-9-]+)`),
	regexp.MustCompile(`missing_pkgs\+=\(([a-z0-9-]+)\)`),
	regexp.MustCompile(`\bpkg=([a-z0-9-]+)`),
	regexp.MustCompile(`(?m)^[A-Z0-9]+_VERSION=(\S+)`),
}

// The README's Prerequisites is the one list of what waitroom needs: it
// names the Go version go.mod names, and every package and pinned tool
// scripts/install-tools.sh installs.
func TestDocsPrerequisites(t *testing.T) {
	_, pre, ok := strings.Cut(readDoc(t, readmePath), "\n## Prerequisites\n")
	if !ok {
		t.Fatal("README.md: no ## Prerequisites")
	}
	pre, _, _ = strings.Cut(pre, "\n## ")
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindStringSubmatch(readDoc(t, "../../go.mod"))
	if m == nil {
		t.Fatal("go.mod: no go line")
	}
	if !strings.Contains(pre, "**Go "+m[1]+"**") {
		t.Errorf("README.md's Prerequisites does not name Go %s, the version go.mod names", m[1])
	}
	tools := readDoc(t, "../../scripts/install-tools.sh")
	var names []string
	for _, re := range toolNames {
		for _, m := range re.FindAllStringSubmatch(tools, -1) {
			names = append(names, m[1])
		}
	}
	if len(names) < 8 {
		t.Fatalf("scripts/install-tools.sh: found only %q; has its shape changed?", names)
	}
	for _, name := range names {
		if !strings.Contains(strings.ToLower(pre), strings.ToLower(name)) {
			t.Errorf("scripts/install-tools.sh installs %s, which README.md's Prerequisites does not name", name)
		}
	}
}

// referenceDocs is the text of the README and of docs/*.md: the docs kept
// current (the dated logs under docs/perf-log/ and docs/attacks/ record
// what was, and do not count).
func referenceDocs(t *testing.T) string {
	t.Helper()
	files, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, f := range append([]string{readmePath}, files...) {
		all.WriteString(readDoc(t, f))
		all.WriteString("\n")
	}
	return all.String()
}

// namedIn reports whether text names path as a whole, or after "./" or
// "../" as a link does: not as the tail of a longer name
// (audit/record.lua is not named by failopen/record.lua).
func namedIn(text, path string) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], path)
		if j < 0 {
			return false
		}
		j += i
		before := text[:j]
		if j == 0 || strings.HasSuffix(before, "./") ||
			!strings.ContainsRune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./", rune(before[j-1])) {
			return true
		}
		i = j + 1
	}
}

// Every Lua script of the repository (Redis's and wrk's) is named, by its
// path, in the README or docs/*.md: a script's file name alone is not
// enough, since several packages have a claim.lua or a record.lua. A
// script under internal/ may drop "internal/", as ARCHITECTURE.md's
// table of scripts does.
func TestDocsNameEveryLuaScript(t *testing.T) {
	docs := referenceDocs(t)
	var scripts []string
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "../.." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "artifacts" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".lua") {
			rel, _ := filepath.Rel("../..", path)
			scripts = append(scripts, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(scripts) == 0 {
		t.Fatal("no Lua script found under the repository")
	}
	for _, s := range scripts {
		if !namedIn(docs, s) && !(strings.HasPrefix(s, "internal/") && namedIn(docs, strings.TrimPrefix(s, "internal/"))) {
			t.Errorf("%s is named nowhere in README.md or docs/*.md: add a line saying what it does (docs/ARCHITECTURE.md, \"Scripts\", for Redis's; docs/PERFORMANCE.md for wrk's)", s)
		}
	}
}

// blockAfter is the first fenced block (opened by fence) after heading in
// doc (named name in failures).
func blockAfter(t *testing.T, doc, name, heading, fence string) string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, heading)
	if !ok {
		t.Fatalf("%s: no %s", name, strings.TrimSpace(heading))
	}
	_, block, ok := strings.Cut(rest, fence)
	if !ok {
		t.Fatalf("%s: no %s block after %s", name, strings.TrimSpace(fence), strings.TrimSpace(heading))
	}
	block, _, _ = strings.Cut(block, "```")
	return block
}
