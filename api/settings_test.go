package api_test

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/internal/engine/queue"
)

// yamlPath is the API contract, whose settings are generated.
const yamlPath = "openapi.yaml"

// TestOpenAPISettings keeps the settings in openapi.yaml what
// queue.Catalog says: between "# BEGIN generated <block>" and "# END
// generated <block>" each block is rendered from the rows, never written
// by hand. WAITROOM_UPDATE_DOCS=1 writes them anew (then run the api
// tests again with it: docs/API.md's reference is made from the yaml).
func TestOpenAPISettings(t *testing.T) {
	src, err := os.ReadFile(yamlPath)
	if err != nil {
		t.Fatal(err)
	}
	out := src
	for _, b := range settingBlocks() {
		if out, err = replaceBlock(out, b.name, b.render); err != nil {
			t.Fatal(err)
		}
	}
	if bytes.Equal(out, src) {
		return
	}
	if os.Getenv("WAITROOM_UPDATE_DOCS") == "1" {
		if err := os.WriteFile(yamlPath, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatal("api/openapi.yaml's settings are not queue.Catalog's; run: WAITROOM_UPDATE_DOCS=1 go test -run TestOpenAPISettings ./api/ && WAITROOM_UPDATE_DOCS=1 go test ./api/")
}

type block struct {
	name   string
	render func(indent string) string
}

// settingBlocks are the generated blocks: the admin view's settings (every
// public one; required but a time, which is absent when not set), and the
// PATCH body's (the operator's).
func settingBlocks() []block {
	return []block{
		{"AdminQueue.required", func(in string) string {
			var b strings.Builder
			for _, st := range queue.Catalog {
				if !st.Private && st.Kind != queue.KindTime {
					fmt.Fprintf(&b, "%s- %s\n", in, st.Name)
				}
			}
			return b.String()
		}},
		{"AdminQueue.properties", func(in string) string {
			var b strings.Builder
			for _, st := range queue.Catalog {
				if !st.Private {
					b.WriteString(property(in, st, false))
				}
			}
			return b.String()
		}},
		{"SettingsUpdate.properties", func(in string) string {
			var b strings.Builder
			for _, st := range queue.Catalog {
				if st.Role.Live() {
					b.WriteString(property(in, st, true))
				}
			}
			return b.String()
		}},
	}
}

// property is the schema of setting st at indent in: as the admin view
// shows it, or as a PATCH sets it (input: a time or string may be null
// or "" for none, a text null).
func property(in string, st queue.Setting, input bool) string {
	var b strings.Builder
	p := func(depth int, format string, a ...any) {
		fmt.Fprintf(&b, "%s%s"+format+"\n", append([]any{in, strings.Repeat("  ", depth)}, a...)...)
	}
	p(0, "%s:", st.Name)
	switch st.Kind {
	case queue.KindInt, queue.KindMillis:
		p(1, "type: integer")
		p(1, "minimum: %d", st.Min)
		if st.Max != queue.Unbounded {
			p(1, "maximum: %d", st.Max)
		}
	case queue.KindBool:
		p(1, "type: boolean")
	case queue.KindRate:
		p(1, "type: number")
		p(1, "minimum: 0")
		p(1, "maximum: 1")
	case queue.KindTime:
		ref := `$ref: "#/components/schemas/Timestamp"`
		if !input {
			p(1, "%s", ref)
			break
		}
		p(1, "anyOf:")
		p(2, "- %s", ref)
		p(2, `- const: ""`)
		p(2, `- type: "null"`)
	case queue.KindURL, queue.KindString:
		if !input {
			p(1, "type: string")
			p(1, "maxLength: %d", st.Max)
			break
		}
		p(1, "anyOf:")
		p(2, "- type: string")
		p(3, "maxLength: %d", st.Max)
		p(2, `- type: "null"`)
	case queue.KindLine, queue.KindText, queue.KindLanes:
		// A text's schema names its languages and bound (QueueTitle for a
		// line, QueueMessage for a text with line breaks); lanes are Lanes.
		ref := `$ref: "#/components/schemas/QueueTitle"`
		switch st.Kind {
		case queue.KindText:
			ref = `$ref: "#/components/schemas/QueueMessage"`
		case queue.KindLanes:
			ref = `$ref: "#/components/schemas/Lanes"`
		}
		if !input {
			p(1, "%s", ref)
			break
		}
		p(1, "anyOf:")
		p(2, "- %s", ref)
		p(2, `- type: "null"`)
	}
	if st.Doc != "" && (input || st.Kind != queue.KindTime && st.Kind != queue.KindLine && st.Kind != queue.KindText) {
		p(1, "description: %s", strconv.Quote(st.Doc))
	}
	return b.String()
}

// replaceBlock puts render's lines, at the marks' indent, between the
// marks of block name in src.
func replaceBlock(src []byte, name string, render func(indent string) string) ([]byte, error) {
	begin := []byte("# BEGIN generated " + name)
	end := []byte("# END generated " + name + "\n")
	i := bytes.Index(src, begin)
	j := bytes.Index(src, end)
	if i < 0 || j < i {
		return nil, fmt.Errorf("openapi.yaml: no marks %q ... %q", begin, end)
	}
	lineStart := bytes.LastIndexByte(src[:i], '\n') + 1
	indent := string(src[lineStart:i])
	after := bytes.IndexByte(src[i:], '\n') + i + 1 // the line after BEGIN
	endLine := bytes.LastIndexByte(src[:j], '\n') + 1
	return slices.Concat(src[:after], []byte(render(indent)), src[endLine:]), nil
}
