package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/waitroom/waitroom/api"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/web"
)

// TestSettingsMatchOpenAPI: the contract's SettingsUpdate is the
// operator's settings of queue.Catalog, each of its kind's type and, for a
// number, of its range.
func TestSettingsMatchOpenAPI(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(api.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	schema := doc.Components.Schemas["SettingsUpdate"].Value
	var documented []string
	for name := range schema.Properties {
		documented = append(documented, name)
	}
	if want := queue.OperatorSettings(); !slices.Equal(slices.Sorted(slices.Values(documented)), slices.Sorted(slices.Values(want))) {
		t.Fatalf("SettingsUpdate has %v, the catalog %v", slices.Sorted(slices.Values(documented)), want)
	}
	for _, name := range documented {
		st, _ := queue.Lookup(name)
		p := schema.Properties[name].Value
		var typ string
		if p.Type != nil && len(*p.Type) == 1 {
			typ = (*p.Type)[0]
		}
		switch st.Kind {
		case queue.KindInt, queue.KindMillis:
			if typ != "integer" || p.Min == nil || p.Max == nil || *p.Min != float64(st.Min) || *p.Max != float64(st.Max) {
				t.Errorf("%s: %s %s..%s, want an integer %d..%d", name, typ, bound(p.Min), bound(p.Max), st.Min, st.Max)
			}
		case queue.KindRate:
			if typ != "number" || p.Min == nil || p.Max == nil || *p.Min != 0 || *p.Max != 1 {
				t.Errorf("%s: %s, want a number 0..1", name, typ)
			}
		case queue.KindBool:
			if typ != "boolean" {
				t.Errorf("%s: %s, want a boolean", name, typ)
			}
		}
	}
}

// TestAdminViewShowsTheSettings: the back office's view of a queue has
// every setting the audit log compares before and after (all but the
// private ones, audited as the value asked), each once, and the client's
// reading of it (adminQueueJSON) every field the view writes.
func TestAdminViewShowsTheSettings(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	e := newEnv(t, rdb, slow, testTimeout, Options{AdminToken: adminToken})
	at := time.Now().Add(time.Hour).UTC()
	if r := e.patch(fmt.Sprintf(`{"prequeue_from":%q,"opens_at":%q}`, at.Format(time.RFC3339), at.Add(time.Minute).Format(time.RFC3339))); r.status != 200 {
		t.Fatalf("PATCH the opening: %d %s", r.status, r.body)
	}
	r := e.do("GET", "/admin/v1/queues/"+e.queue, "", "Authorization", "Bearer "+adminToken)
	if r.status != 200 {
		t.Fatalf("GET: %d %s", r.status, r.body)
	}
	b := r.body
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	for _, st := range queue.Catalog {
		if _, ok := fields[st.Name]; ok == st.Private {
			t.Errorf("%s: in the admin view %v, private %v", st.Name, ok, st.Private)
		}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var client adminQueueJSON
	if err := dec.Decode(&client); err != nil {
		t.Errorf("the view's JSON as a client reads it: %v", err)
	}
}

// TestBackOfficeFormsMatchTheCatalog: each number form of the back office
// (form[data-setting] in admin.html) bounds its input as the catalog
// bounds the setting, in the unit it shows (data-scale).
func TestBackOfficeFormsMatchTheCatalog(t *testing.T) {
	page, err := web.Static.ReadFile("static/admin.html")
	if err != nil {
		t.Fatal(err)
	}
	form := regexp.MustCompile(`(?s)<form class="setting-form[^"]*" data-setting="([a-z0-9_]+)"([^>]*)>.*?<input class="setting-input[^"]*" type="(\w+)"([^>]*)>`)
	attr := func(s, name string) (float64, bool) {
		m := regexp.MustCompile(` ` + name + `="([^"]*)"`).FindStringSubmatch(s)
		if m == nil {
			return 0, false
		}
		f, err := strconv.ParseFloat(m[1], 64)
		return f, err == nil
	}
	forms := form.FindAllStringSubmatch(string(page), -1)
	if len(forms) < 5 {
		t.Fatalf("found %d setting forms in admin.html", len(forms))
	}
	for _, m := range forms {
		name, formAttrs, typ, inputAttrs := m[1], m[2], m[3], m[4]
		st, ok := queue.Lookup(name)
		if !ok || st.Role != queue.RoleOperator {
			t.Errorf("form %s: no setting an operator changes", name)
			continue
		}
		if typ != "number" {
			continue
		}
		scale, ok := attr(formAttrs, "data-scale")
		if !ok {
			scale = 1
		}
		lo, hi := float64(st.Min), float64(st.Max)
		if st.Kind == queue.KindRate {
			lo, hi = 0, 1
		}
		gotLo, okLo := attr(inputAttrs, "min")
		gotHi, okHi := attr(inputAttrs, "max")
		if !okLo || !okHi || math.Abs(gotLo*scale-lo) > 1e-9 || math.Abs(gotHi*scale-hi) > 1e-9 {
			t.Errorf("form %s: min %v max %v (scale %v), want %v..%v in the API's unit", name, gotLo, gotHi, scale, lo, hi)
		}
	}
}

// bound is a schema's minimum or maximum as a message shows it.
func bound(f *float64) string {
	if f == nil {
		return "none"
	}
	return strconv.FormatFloat(*f, 'f', -1, 64)
}
