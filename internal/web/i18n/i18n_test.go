package i18n

import (
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/web"
)

func catalogs(t *testing.T, page string) *Catalogs {
	t.Helper()
	fsys, err := fs.Sub(web.Static, "static/i18n")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Load(fsys, page)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Every language of a page has the keys English has, no more; each
// message uses the placeholders English's does (a plural form may leave
// out the count, "1 person"); and each renders in every plural form with
// every placeholder filled and nothing left in braces.
func TestCatalogs(t *testing.T) {
	for _, page := range []string{"waiting", "admin"} {
		t.Run(page, func(t *testing.T) {
			c := catalogs(t, page)
			en := c.Keys("en")
			if len(en) == 0 || !slices.Contains(en, "pageTitle") {
				t.Fatalf("English has %d keys, and pageTitle? %v", len(en), slices.Contains(en, "pageTitle"))
			}
			for _, lang := range Langs {
				keys := c.Keys(lang)
				for _, k := range en {
					if !slices.Contains(keys, k) {
						t.Errorf("%s/%s.json lacks %q", page, lang, k)
					}
				}
				for _, k := range keys {
					// A setting's label and hint ("setting.<name>") are
					// in English in queue.Catalog, not en.json
					// (internal/web/httpapi's TestSettingWordsTranslated).
					if !slices.Contains(en, k) && !strings.HasPrefix(k, "setting.") {
						t.Errorf("%s/%s.json has %q, which en.json has not", page, lang, k)
					}
				}
				for _, k := range en {
					m, ok := c.Message(lang, k)
					if !ok {
						continue
					}
					want := placeholdersOf(c, "en", k)
					if got := placeholdersOf(c, lang, k); !slices.Equal(got, want) {
						t.Errorf("%s/%s.json %q uses {%s}, en.json {%s}", page, lang, k, strings.Join(got, "} {"), strings.Join(want, "} {"))
					}
					params := map[string]any{}
					for _, p := range want {
						params[p] = "X"
					}
					for _, count := range []int{0, 1, 2, 3, 5, 11, 21, 1000000} {
						params["count"] = count
						out := c.Text(lang, k, params)
						if strings.TrimSpace(out) == "" || strings.ContainsAny(out, "{}") {
							t.Errorf("%s/%s.json %q with count %d renders %q", page, lang, k, count, out)
						}
					}
					for _, f := range m.Forms() {
						if strings.TrimSpace(f) == "" {
							t.Errorf("%s/%s.json %q has an empty text", page, lang, k)
						}
					}
				}
			}
		})
	}
}

// placeholdersOf are the placeholders of lang's message key over all its
// forms, but count: a form may spell its number out ("1 person").
func placeholdersOf(c *Catalogs, lang, key string) []string {
	m, _ := c.Message(lang, key)
	seen := map[string]bool{}
	for _, f := range m.Forms() {
		for _, p := range Placeholders(f) {
			if p != "count" {
				seen[p] = true
			}
		}
	}
	return sortedKeys(seen)
}

// A plural message takes the form CLDR gives the count in its language.
func TestPluralForms(t *testing.T) {
	c := catalogs(t, "waiting")
	cases := []struct {
		lang  string
		count int
		want  string
	}{
		{"en", 1, "1 person is waiting; estimated wait E"},
		{"en", 2, "2 people are waiting; estimated wait E"},
		{"en", 0, "0 people are waiting; estimated wait E"},
		{"ko", 1, "현재 대기 인원 1명, 예상 대기 시간 E"},
		{"es", 1, "1 persona está esperando; espera estimada E"},
		{"es", 7, "7 personas están esperando; espera estimada E"},
	}
	for _, tc := range cases {
		got := c.Text(tc.lang, "summary", map[string]any{"n": tc.count, "count": tc.count, "eta": "E"})
		if got != tc.want {
			t.Errorf("%s summary(%d) = %q, want %q", tc.lang, tc.count, got, tc.want)
		}
	}
	if got := c.Text("en", "no such key", nil); got != "no such key" {
		t.Errorf("a missing key renders %q, want the key", got)
	}
}

func TestChoose(t *testing.T) {
	cases := []struct {
		query, saved, accept, want string
	}{
		{"", "", "", "en"},
		{"ko", "", "", "ko"},
		{"KO", "", "", "ko"},
		{"ja", "ko", "es", "ja"},
		{"", "ko", "es", "ko"},
		{"fr", "", "es-MX,es;q=0.9", "es"}, // an unknown ?lang= falls through
		{"fr", "xx", "de", "en"},           // nothing known: English
		{"", "", "ko-KR,ko;q=0.9,en;q=0.8", "ko"},
		{"", "", "zh-TW", "zh-Hant"},
		{"", "", "zh-HK", "zh-Hant"},
		{"", "", "zh-CN", "zh-Hans"},
		{"", "", "zh", "zh-Hans"},
		{"", "", "zh-Hant-TW", "zh-Hant"},
		{"zh-tw", "", "", "zh-Hant"},
		{"zh-Hans", "", "", "zh-Hans"},
		{"", "", "ja-JP", "ja"},
		{"", "", "de-DE,fr;q=0.9", "en"},
		{"", "", "de-DE,es;q=0.5", "es"},
		{"", "", "en;q=0.1,ja;q=0.9", "ja"},
		{"", "", "*", "en"},
		{"", "", "garbage;;;q=x", "en"},
		{"<script>", "../../etc", "", "en"},
	}
	for _, tc := range cases {
		if got := Choose(tc.query, tc.saved, tc.accept); got != tc.want {
			t.Errorf("Choose(%q, %q, %q) = %q, want %q", tc.query, tc.saved, tc.accept, got, tc.want)
		}
	}
}

// Whatever a client sends, the choice is one of Langs.
func FuzzChoose(f *testing.F) {
	f.Add("ko", "", "en-US,en;q=0.9")
	f.Add("", "zh-TW", "zh-Hant-HK;q=0.1,*;q=0.5")
	f.Add("x-klingon", "i-default", "es-419, es;q=0.9, q=1")
	f.Add("", "", strings.Repeat("en-US-x-", 200))
	f.Fuzz(func(t *testing.T, query, saved, accept string) {
		if got := Choose(query, saved, accept); !Supported(got) {
			t.Fatalf("Choose(%q, %q, %q) = %q", query, saved, accept, got)
		}
	})
}

func TestFill(t *testing.T) {
	got := Fill("{a} and {b}, not {c}; {a}", map[string]any{"a": "1", "b": 2})
	if want := "1 and 2, not {c}; 1"; got != want {
		t.Errorf("Fill = %q, want %q", got, want)
	}
}
