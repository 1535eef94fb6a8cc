// Package i18n holds the pages' message catalogs and picks a request's
// language. The catalogs are the pages' own (web/static/i18n/{page}/{lang}.json),
// read here so the server renders the waiting page in the same words the
// script later uses: a message is a string with named placeholders
// ("Try again at {time}"), or an object of CLDR plural forms
// ({"one": ..., "other": ...}) picked by the count parameter.
//
// Language matching and plural rules come from golang.org/x/text
// (language.Matcher, feature/plural): CLDR's data, the same the browser's
// Intl.PluralRules follows, rather than a hand-kept table of how Chinese
// scripts and regions or Spanish plurals go.
package i18n

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/text/feature/plural"
	"golang.org/x/text/language"
)

// Langs are the languages the pages speak, English first: the fallback.
var Langs = []string{"en", "ko", "ja", "zh-Hans", "zh-Hant", "es"}

// names are the languages as their speakers write them (the switcher).
var names = map[string]string{
	"en": "English", "ko": "한국어", "ja": "日本語",
	"zh-Hans": "简体中文", "zh-Hant": "繁體中文", "es": "Español",
}

// Name is lang in its own words ("한국어").
func Name(lang string) string { return names[lang] }

// Supported reports whether lang is one of Langs, spelled exactly.
func Supported(lang string) bool {
	_, ok := names[lang]
	return ok
}

var (
	tags = func() []language.Tag {
		t := make([]language.Tag, len(Langs))
		for i, l := range Langs {
			t[i] = language.MustParse(l)
		}
		return t
	}()
	matcher = language.NewMatcher(tags)
)

// Choose is the language of a request: query (?lang=) when it names one,
// else saved (the wr_lang cookie, the user's last choice), else the best
// match of acceptLanguage (the header), else English.
func Choose(query, saved, acceptLanguage string) string {
	for _, one := range []string{query, saved} {
		if l := match(one); l != "" {
			return l
		}
	}
	if len(acceptLanguage) > 0 && len(acceptLanguage) <= 1024 {
		if asked, _, err := language.ParseAcceptLanguage(acceptLanguage); err == nil && len(asked) > 0 {
			if _, i, c := matcher.Match(asked...); c > language.No {
				return Langs[i]
			}
		}
	}
	return Langs[0]
}

// match is the language of Langs one tag asks for, or "".
func match(tag string) string {
	if tag == "" || len(tag) > 64 {
		return ""
	}
	t, err := language.Parse(tag)
	if err != nil {
		return ""
	}
	if _, i, c := matcher.Match(t); c > language.No {
		return Langs[i]
	}
	return ""
}

// forms are the plural forms a message may have, CLDR's names.
var forms = map[string]plural.Form{
	"zero": plural.Zero, "one": plural.One, "two": plural.Two,
	"few": plural.Few, "many": plural.Many, "other": plural.Other,
}

// Message is one entry of a catalog: Text, or Plural forms by CLDR name
// (always with "other").
type Message struct {
	Text   string
	Plural map[string]string
}

// UnmarshalJSON reads a string or an object of plural forms.
func (m *Message) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, &m.Text); err == nil {
		return nil
	}
	if err := json.Unmarshal(b, &m.Plural); err != nil {
		return fmt.Errorf("a message is a string or an object of plural forms")
	}
	if _, ok := m.Plural["other"]; !ok {
		return fmt.Errorf("plural forms without \"other\"")
	}
	for f := range m.Plural {
		if _, ok := forms[f]; !ok {
			return fmt.Errorf("%q is no plural form (zero, one, two, few, many, other)", f)
		}
	}
	return nil
}

// Forms are the message's texts: Text alone, or every plural form.
func (m Message) Forms() []string {
	if m.Plural == nil {
		return []string{m.Text}
	}
	out := make([]string, 0, len(m.Plural))
	for _, k := range sortedKeys(m.Plural) {
		out = append(out, m.Plural[k])
	}
	return out
}

// Catalogs are one page's messages in every language.
type Catalogs struct {
	Page  string
	langs map[string]map[string]Message
	raw   map[string]json.RawMessage
}

// Load reads page's catalogs from fsys ({page}/{lang}.json for each of
// Langs), each checked to be messages.
func Load(fsys fs.FS, page string) (*Catalogs, error) {
	c := &Catalogs{Page: page, langs: map[string]map[string]Message{}, raw: map[string]json.RawMessage{}}
	for _, lang := range Langs {
		name := path.Join(page, lang+".json")
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("i18n: %w", err)
		}
		var m map[string]Message
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("i18n: %s: %w", name, err)
		}
		// Compacted, for the page: the script reads it as it is.
		var buf strings.Builder
		enc := json.NewEncoder(&buf)
		var v any
		_ = json.Unmarshal(b, &v)
		if err := enc.Encode(v); err != nil {
			return nil, fmt.Errorf("i18n: %s: %w", name, err)
		}
		c.langs[lang] = m
		c.raw[lang] = json.RawMessage(strings.TrimSpace(buf.String()))
	}
	return c, nil
}

// Keys are lang's message keys, sorted.
func (c *Catalogs) Keys(lang string) []string { return sortedKeys(c.langs[lang]) }

// Message is lang's message key, and whether there is one.
func (c *Catalogs) Message(lang, key string) (Message, bool) {
	m, ok := c.langs[lang][key]
	return m, ok
}

// JSON is lang's catalog as the script reads it: encoding/json's output,
// so <, > and & are escaped and it is safe inside a <script> element.
func (c *Catalogs) JSON(lang string) json.RawMessage { return c.raw[lang] }

// Plain is lang's messages as plain strings, for templates: a plural
// message gives its "other" form, placeholders stay as written.
func (c *Catalogs) Plain(lang string) map[string]string {
	out := make(map[string]string, len(c.langs[lang]))
	for k, m := range c.langs[lang] {
		if m.Plural != nil {
			out[k] = m.Plural["other"]
		} else {
			out[k] = m.Text
		}
	}
	return out
}

// Text is lang's message key with its placeholders filled from params;
// a plural message takes the form CLDR gives params["count"] (an int) in
// lang. The key itself when there is no such message.
func (c *Catalogs) Text(lang, key string, params map[string]any) string {
	m, ok := c.langs[lang][key]
	if !ok {
		return key
	}
	s := m.Text
	if m.Plural != nil {
		count, _ := params["count"].(int)
		s = m.Plural[formName(lang, count)]
		if s == "" {
			s = m.Plural["other"]
		}
	}
	return Fill(s, params)
}

// formName is CLDR's plural form of the integer n in lang.
func formName(lang string, n int) string {
	if n < 0 {
		n = -n
	}
	f := plural.Cardinal.MatchPlural(language.Make(lang), n, 0, 0, 0, 0)
	for name, form := range forms {
		if form == f {
			return name
		}
	}
	return "other"
}

// placeholder is "{name}" in a message.
var placeholder = regexp.MustCompile(`\{([A-Za-z]+)\}`)

// Fill replaces s's {name} placeholders with params' values; one params
// lacks stays as written.
func Fill(s string, params map[string]any) string {
	if len(params) == 0 {
		return s
	}
	return placeholder.ReplaceAllStringFunc(s, func(p string) string {
		v, ok := params[p[1:len(p)-1]]
		if !ok {
			return p
		}
		switch v := v.(type) {
		case string:
			return v
		case int:
			return strconv.Itoa(v)
		default:
			return fmt.Sprint(v)
		}
	})
}

// Placeholders are the names of s's placeholders, sorted, once each.
func Placeholders(s string) []string {
	seen := map[string]bool{}
	for _, m := range placeholder.FindAllStringSubmatch(s, -1) {
		seen[m[1]] = true
	}
	return sortedKeys(seen)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Cookie keeps the user's last choice of language, set by the pages'
// switcher (i18n.js).
const Cookie = "wr_lang"

// FromRequest is r's language by Choose: ?lang=, the Cookie, then
// Accept-Language.
func FromRequest(r *http.Request) string {
	var saved string
	if c, err := r.Cookie(Cookie); err == nil {
		saved = c.Value
	}
	return Choose(r.URL.Query().Get("lang"), saved, r.Header.Get("Accept-Language"))
}
