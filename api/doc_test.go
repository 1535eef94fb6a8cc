package api_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/waitroom/waitroom/api"
)

// docPath is the API document: a guide written by hand, then the
// reference made from openapi.yaml between refBegin and refEnd.
const docPath = "../docs/API.md"

const (
	refBegin = "<!-- BEGIN REFERENCE: made from api/openapi.yaml by api/doc_test.go; edit the document, then WAITROOM_UPDATE_DOCS=1 go test ./api/ -->\n"
	refEnd   = "<!-- END REFERENCE -->\n"
)

// TestAPIDoc keeps docs/API.md's reference what the document says: it is
// rendered from openapi.yaml, never written by hand, so it cannot drift.
// WAITROOM_UPDATE_DOCS=1 writes it anew between the marks.
func TestAPIDoc(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(api.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	before, rest, ok := bytes.Cut(file, []byte(refBegin))
	_, after, ok2 := bytes.Cut(rest, []byte(refEnd))
	if !ok || !ok2 {
		t.Fatalf("docs/API.md: no reference between %q and %q", refBegin, refEnd)
	}
	want := render(doc, pathOrder(api.OpenAPI))
	if bytes.Equal(rest[:len(rest)-len(after)-len(refEnd)], want) {
		return
	}
	if os.Getenv("WAITROOM_UPDATE_DOCS") == "1" {
		out := slices.Concat(before, []byte(refBegin), want, []byte(refEnd), after)
		if err := os.WriteFile(docPath, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatal("docs/API.md's reference is not what api/openapi.yaml says; run: WAITROOM_UPDATE_DOCS=1 go test ./api/")
}

// pathOrder is the paths in the order the document lists them, which
// groups them as their authors meant (the loader keeps a map).
func pathOrder(src []byte) []string {
	var paths []string
	in := false
	sc := bufio.NewScanner(bytes.NewReader(src))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "paths:":
			in = true
		case in && len(line) > 0 && line[0] != ' ' && line[0] != '#':
			return paths
		case in && strings.HasPrefix(line, "  /") && strings.HasSuffix(line, ":"):
			paths = append(paths, strings.TrimSuffix(strings.TrimSpace(line), ":"))
		}
	}
	return paths
}

var methods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"}

func render(doc *openapi3.T, order []string) []byte {
	var b bytes.Buffer
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("## Reference\n\n")
	p("Every endpoint, rendered from the OpenAPI 3.1 document\n")
	p("[`api/openapi.yaml`](../api/openapi.yaml), which the service serves at\n")
	p("`GET /api/openapi.yaml` and `internal/web/httpapi`'s contract test checks\n")
	p("against the real server.\n\n")
	p("%s\n", strings.TrimSpace(doc.Info.Description))
	p("\n")
	for _, tag := range doc.Tags {
		p("- [%s](#%s): %s\n", tag.Name, tag.Name, tag.Description)
	}
	p("- [Error codes](#error-codes)\n")
	for _, tag := range doc.Tags {
		p("\n### %s\n\n%s\n", tag.Name, tag.Description)
		for _, path := range order {
			item := doc.Paths.Value(path)
			for _, m := range methods {
				op := item.GetOperation(m)
				if op == nil || !slices.Contains(op.Tags, tag.Name) {
					continue
				}
				renderOp(&b, m, path, item, op)
			}
		}
	}
	if s := doc.Components.Schemas["ErrorCode"]; s != nil {
		p("\n### Error codes\n\n%s\n", strings.TrimSpace(s.Value.Description))
	}
	return b.Bytes()
}

func renderOp(b *bytes.Buffer, method, path string, item *openapi3.PathItem, op *openapi3.Operation) {
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	p("\n#### `%s %s`\n\n%s\n", method, path, op.Summary)
	if d := strings.TrimSpace(op.Description); d != "" {
		p("\n%s\n", d)
	}
	if op.Security != nil && len(*op.Security) > 0 {
		var alts []string
		for _, req := range *op.Security {
			var names []string
			for name := range req {
				names = append(names, "`"+name+"`")
			}
			sort.Strings(names)
			if len(names) == 0 {
				names = []string{"none"}
			}
			alts = append(alts, strings.Join(names, " and "))
		}
		p("\nAuthentication: %s.\n", strings.Join(alts, ", or "))
	}
	params := append(slices.Clone(item.Parameters), op.Parameters...)
	if len(params) > 0 {
		p("\n| parameter | in | required | description |\n|---|---|---|---|\n")
		for _, pr := range params {
			v := pr.Value
			p("| `%s` | %s | %s | %s |\n", v.Name, v.In, yesNo(v.Required), oneLine(v.Description))
		}
	}
	if rb := op.RequestBody; rb != nil && rb.Value != nil {
		for ct, mt := range rb.Value.Content {
			name := ct
			if mt.Schema != nil && mt.Schema.Ref != "" {
				name += ", schema `" + refName(mt.Schema.Ref) + "`"
			}
			p("\nBody: %s.", name)
			if d := oneLine(rb.Value.Description); d != "" {
				p(" %s", d)
			}
			p("\n")
		}
	}
	p("\n| status | meaning | codes |\n|---|---|---|\n")
	statuses := op.Responses.Map()
	keys := make([]string, 0, len(statuses))
	for k := range statuses {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		r := statuses[k].Value
		desc := ""
		if r.Description != nil {
			desc = oneLine(*r.Description)
		}
		var codes []string
		for _, mt := range r.Content {
			codes = append(codes, errorCodes(mt.Schema)...)
		}
		slices.Sort(codes)
		codes = slices.Compact(codes)
		for i := range codes {
			codes[i] = "`" + codes[i] + "`"
		}
		p("| %s | %s | %s |\n", k, desc, strings.Join(codes, ", "))
	}
}

// errorCodes are the error codes an answer's schema narrows "code" to.
func errorCodes(s *openapi3.SchemaRef) []string {
	if s == nil || s.Value == nil {
		return nil
	}
	var out []string
	if e := s.Value.Properties["error"]; e != nil && e.Value != nil {
		if c := e.Value.Properties["code"]; c != nil && c.Value != nil && c.Ref == "" {
			if c.Value.Const != nil {
				out = append(out, fmt.Sprint(c.Value.Const))
			}
			for _, v := range c.Value.Enum {
				out = append(out, fmt.Sprint(v))
			}
		}
	}
	for _, sub := range s.Value.AllOf {
		out = append(out, errorCodes(sub)...)
	}
	return out
}

func refName(ref string) string { return ref[strings.LastIndex(ref, "/")+1:] }

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// oneLine fits a description into a table cell.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.ReplaceAll(s, "|", "\\|")
}
