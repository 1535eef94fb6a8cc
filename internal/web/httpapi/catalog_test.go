package httpapi

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/waitroom/waitroom/api"
	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
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
// private ones, audited as the value asked), and every field a client
// reads (adminQueueJSON).
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
	// What clients read today stays: every field of adminQueueJSON (but
	// those left out while none: a draw not made, sliding sessions off).
	for _, f := range reflect.VisibleFields(reflect.TypeFor[adminQueueJSON]()) {
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if _, ok := fields[name]; !ok && (opts != "omitempty" || name == "opens_at" || name == "prequeue_from") {
			t.Errorf("the view has no %s", name)
		}
	}
}

// TestBackOfficeFormsMatchTheCatalog: every setting the back office
// shows a field for (Form) is one an operator changes, of a kind
// admin-settings.js builds a field for, with an English label, in a
// group admin.html has (.settings[data-form]); the fields are built from
// the catalog, so their bounds are the rows'.
func TestBackOfficeFormsMatchTheCatalog(t *testing.T) {
	page, err := web.Static.ReadFile("static/admin.html")
	if err != nil {
		t.Fatal(err)
	}
	built := []queue.Kind{queue.KindInt, queue.KindMillis, queue.KindRate, queue.KindBool, queue.KindURL, queue.KindString}
	forms := 0
	for _, st := range queue.Catalog {
		if st.Form == "" {
			continue
		}
		forms++
		if !st.Role.Live() || st.Private || !slices.Contains(built, st.Kind) || st.Label == "" {
			t.Errorf("%s: a field in the back office, but role %v, private %v, kind %v, label %q", st.Name, st.Role, st.Private, st.Kind, st.Label)
		}
		if !strings.Contains(string(page), `<div class="settings" data-form="`+st.Form+`">`) {
			t.Errorf("%s: admin.html has no group %q", st.Name, st.Form)
		}
	}
	if forms < 9 {
		t.Errorf("%d settings have a field in the back office, want at least 9", forms)
	}
}

// TestSettingWordsTranslated lists, per language, the settings whose
// label or hint i18n/admin/<lang>.json does not translate (the page then
// shows the catalog's English): a list to work through, not a failure.
// A translation of no setting with a field is one.
func TestSettingWordsTranslated(t *testing.T) {
	want := map[string]bool{}
	for _, st := range queue.Catalog {
		if st.Form != "" {
			want["setting."+st.Name] = true
			want["setting."+st.Name+".hint"] = st.Hint != ""
		}
	}
	for _, lang := range []string{"en", "ko", "ja", "zh-Hans", "zh-Hant", "es"} {
		b, err := web.Static.ReadFile("static/i18n/admin/" + lang + ".json")
		if err != nil {
			t.Fatal(err)
		}
		var messages map[string]json.RawMessage
		if err := json.Unmarshal(b, &messages); err != nil {
			t.Fatalf("%s: %v", lang, err)
		}
		var missing []string
		for key, needed := range want {
			if _, ok := messages[key]; needed && !ok && lang != "en" {
				missing = append(missing, key)
			}
		}
		for key := range messages {
			if strings.HasPrefix(key, "setting.") && !want[key] {
				t.Errorf("%s.json translates %q, no setting's field", lang, key)
			}
		}
		if len(missing) > 0 {
			slices.Sort(missing)
			t.Logf("%s.json shows in English: %v", lang, missing)
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
