// Package pages renders the waiting page: the project's template
// (web/pages/waiting.html) or an operator's (WAITROOM_PAGES_DIR), in the
// language the request asks for, with the queue's title and message and
// the one script tag that runs the line. It also serves the operator's
// assets under /_waitroom/site/.
//
// An operator's directory holds waiting.html, and per queue
// queues/{queue}/waiting.html, both Go html/template files given Data.
// Every template is parsed and rendered once at start-up, in every
// language: one that does not parse, fails to render, or leaves out
// {{.Script}} stops start-up with its file (and line, where there is
// one), not the first visitor's page.
package pages

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	// html/template without method calls: the standard one's
	// reflect.MethodByName makes the linker keep every exported method of
	// the binary (7 MB of 23). Data has no methods, so a template renders
	// as before (a name that is no field fails in New, as it did).
	template "github.com/DataDog/datadog-agent/pkg/template/html"

	"github.com/waitroom/waitroom/internal/web/i18n"
	"github.com/waitroom/waitroom/web"
)

// Data is what a waiting page's template gets. The figures are as the
// server knew them when it rendered the page (0 when it did not yet);
// the script keeps the page's elements current as it polls (docs/API.md,
// "The site's own page", names the element ids it fills).
type Data struct {
	Lang    string // the page's language: en, ko, ja, zh-Hans, zh-Hant or es
	Queue   string // the queue's name
	Title   string // the queue's title in Lang (else English, else any); "" when none
	Message string // the queue's message, the same way
	// Position is the user's number in line, Ahead the people before
	// them, Waiting everyone in line; 0 when not known at render time.
	Position, Ahead, Waiting int64
	// ETA is the estimated wait as a range; zero when not known.
	ETA ETA
	// State is the page's state: "loading" when rendered; then the
	// script's (body[data-state]: waiting, entered, left, ...).
	State string
	// Messages are Lang's words (web/static/i18n/waiting/{lang}.json),
	// plain: {{.Messages.turnTitle}}. A plural message gives its "other"
	// form; {placeholders} stay as written.
	Messages map[string]string
	// Languages are the six, for a switcher: buttons with data-lang.
	Languages []Language
	// Closed: the page is the sold-out page the gate shows while the
	// sale is closed (RenderClosed), with the operator's ClosedMessage
	// in Lang (else English, else any) and ReopensAt (RFC 3339; "": not
	// said). The script shows the closed panel and asks nothing.
	Closed        bool
	ClosedMessage string
	ReopensAt     string
	// Script runs the line (polling, proof of work, leave, the hand-off):
	// the page's data and its module script. Every template includes it
	// once, in <head> or <body>.
	Script template.HTML
}

// ETA is a wait in seconds, from Low to High.
type ETA struct{ Low, High int64 }

// Language is one entry of a language switcher.
type Language struct {
	Tag     string // "zh-Hant"
	Name    string // "繁體中文"
	Current bool   // the page's language
}

// Text is a queue's title and message, each by language ("en": ...).
type Text struct {
	Title, Message map[string]string
}

// Closing is a closed sale as the sold-out page tells it: the operator's
// message by language and when sales reopen (RFC 3339; "": not said).
type Closing struct {
	Message   map[string]string
	ReopensAt string
}

// entryScript is the module every template must include (in Script).
const entryScript = `<script type="module" src="/_waitroom/static/waiting.js"></script>`

// Options configure New.
type Options struct {
	// Project holds the project's own waiting.html and script.html
	// (web/pages).
	Project fs.FS
	// Messages are the waiting page's catalogs.
	Messages *i18n.Catalogs
	// Dir is the operator's directory (WAITROOM_PAGES_DIR); "" for none.
	Dir string
	// Queues are the queues there are: queues/{queue}/ must name one.
	Queues []string
}

// Pages renders waiting pages.
type Pages struct {
	project  *template.Template
	site     *template.Template            // the operator's waiting.html; nil: none
	perQueue map[string]*template.Template // queues/{queue}/waiting.html
	script   string                        // script.html: the module tags
	messages *i18n.Catalogs
	langs    map[string]langData // what each language's pages share, made once
	root     *os.Root            // the operator's directory, for its assets; nil: none
}

// langData is what every page in one language shares: made once in New,
// not for each page (a catalog is some 10 KB), and only read after.
type langData struct {
	plain     map[string]string // Data.Messages
	languages []Language        // Data.Languages
	head      []byte            // the script's data up to the queue's text: {"lang":...,"messages":...
}

// New parses and checks every template.
func New(o Options) (*Pages, error) {
	p := &Pages{messages: o.Messages, perQueue: map[string]*template.Template{}, langs: map[string]langData{}}
	for _, lang := range i18n.Langs {
		d := langData{plain: o.Messages.Plain(lang)}
		for _, l := range i18n.Langs {
			d.languages = append(d.languages, Language{Tag: l, Name: i18n.Name(l), Current: l == lang})
		}
		tag, err := json.Marshal(lang)
		if err != nil {
			return nil, fmt.Errorf("pages: %w", err)
		}
		d.head = fmt.Appendf(nil, `{"lang":%s,"messages":%s`, tag, o.Messages.JSON(lang))
		p.langs[lang] = d
	}
	script, err := fs.ReadFile(o.Project, "script.html")
	if err != nil {
		return nil, fmt.Errorf("pages: %w", err)
	}
	p.script = string(script)
	if !strings.Contains(p.script, entryScript) {
		return nil, fmt.Errorf("pages: script.html lacks %s", entryScript)
	}
	src, err := fs.ReadFile(o.Project, "waiting.html")
	if err != nil {
		return nil, fmt.Errorf("pages: %w", err)
	}
	if p.project, err = p.parse("web/pages/waiting.html", src); err != nil {
		return nil, err
	}
	if o.Dir == "" {
		return p, nil
	}
	if p.root, err = os.OpenRoot(o.Dir); err != nil {
		return nil, fmt.Errorf("pages: WAITROOM_PAGES_DIR: %w", err)
	}
	name := filepath.Join(o.Dir, "waiting.html")
	if src, err := os.ReadFile(name); err == nil {
		if p.site, err = p.parse(name, src); err != nil {
			return nil, err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("pages: %w", err)
	}
	known := map[string]bool{}
	for _, q := range o.Queues {
		known[q] = true
	}
	entries, err := os.ReadDir(filepath.Join(o.Dir, "queues"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("pages: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(o.Dir, "queues", e.Name())
		if !known[e.Name()] {
			return nil, fmt.Errorf("pages: %s: there is no queue %q", dir, e.Name())
		}
		name := filepath.Join(dir, "waiting.html")
		src, err := os.ReadFile(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue // assets only
		}
		if err != nil {
			return nil, fmt.Errorf("pages: %w", err)
		}
		if p.perQueue[e.Name()], err = p.parse(name, src); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// parse reads one template, named by its file so that errors say where
// ("template: /srv/pages/waiting.html:12: ..."), and renders it in every
// language with sample data: it must include Script.
func (p *Pages) parse(name string, src []byte) (*template.Template, error) {
	t, err := template.New(name).Option("missingkey=error").Parse(string(src))
	if err != nil {
		return nil, fmt.Errorf("pages: %w", err)
	}
	sample := Text{
		Title:   map[string]string{"en": "Sample title"},
		Message: map[string]string{"en": "Sample message"},
	}
	for _, lang := range i18n.Langs {
		var out bytes.Buffer
		if err := t.Execute(&out, p.data("sample", lang, sample, nil)); err != nil {
			return nil, fmt.Errorf("pages: %w", err)
		}
		// The sold-out page is the same template, closed.
		if err := t.Execute(io.Discard, p.data("sample", lang, sample, &Closing{Message: sample.Message})); err != nil {
			return nil, fmt.Errorf("pages: %w", err)
		}
		if n := strings.Count(out.String(), entryScript); n != 1 {
			return nil, fmt.Errorf("pages: %s: the page must include {{.Script}} once (the script that runs the line); it does %d times", name, n)
		}
	}
	return t, nil
}

// Render writes queue's waiting page in lang with its text.
func (p *Pages) Render(w io.Writer, queue, lang string, text Text) error {
	return p.template(queue).Execute(w, p.data(queue, lang, text, nil))
}

// RenderClosed writes queue's sold-out page in lang: its waiting page
// (the operator's template, if any), closed with c, which the script
// shows without a request.
func (p *Pages) RenderClosed(w io.Writer, queue, lang string, text Text, c Closing) error {
	return p.template(queue).Execute(w, p.data(queue, lang, text, &c))
}

func (p *Pages) template(queue string) *template.Template {
	if t := p.perQueue[queue]; t != nil {
		return t
	}
	if p.site != nil {
		return p.site
	}
	return p.project
}

// data is a page's Data; c is nil but on the sold-out page.
func (p *Pages) data(queue, lang string, text Text, c *Closing) Data {
	l := p.langs[lang]
	d := Data{
		Lang:      lang,
		Queue:     queue,
		Title:     pick(text.Title, lang),
		Message:   pick(text.Message, lang),
		State:     "loading",
		Messages:  l.plain,
		Languages: l.languages,
		Script:    p.scriptTag(l.head, text, c),
	}
	if c != nil {
		d.Closed, d.ClosedMessage, d.ReopensAt = true, pick(c.Message, lang), c.ReopensAt
	}
	return d
}

// scriptTag is Data.Script: the page's data for the script (#wr-page:
// the language, its catalog, the queue's text in every language) and
// the module tags. encoding/json escapes <, > and &, in the catalog
// (i18n.Catalogs.JSON) as in the text, so no text an operator or a
// catalog holds can end the data block early.
//
// On the sold-out page it also carries "closed": the message by
// language and the reopening, which the script shows without a request.
func (p *Pages) scriptTag(head []byte, text Text, c *Closing) template.HTML {
	title, err := json.Marshal(nonNil(text.Title))
	if err != nil {
		panic(err) // a map of strings always encodes
	}
	message, err := json.Marshal(nonNil(text.Message))
	if err != nil {
		panic(err)
	}
	var b strings.Builder
	b.Grow(len(head) + len(title) + len(message) + len(p.script) + 80)
	b.WriteString(`<script type="application/json" id="wr-page">`)
	b.Write(head)
	b.WriteString(`,"title":`)
	b.Write(title)
	b.WriteString(`,"message":`)
	b.Write(message)
	if c != nil {
		closed, err := json.Marshal(struct {
			Message   map[string]string `json:"message"`
			ReopensAt string            `json:"reopens_at,omitempty"`
		}{nonNil(c.Message), c.ReopensAt})
		if err != nil {
			panic(err) // strings always encode
		}
		b.WriteString(`,"closed":`)
		b.Write(closed)
	}
	b.WriteString("}</script>\n  ")
	b.WriteString(p.script)
	return template.HTML(b.String())
}

// pick is the variant of lang, else English, else the first language
// that has one; "" when none.
func pick(variants map[string]string, lang string) string {
	if v := variants[lang]; v != "" {
		return v
	}
	for _, l := range i18n.Langs {
		if v := variants[l]; v != "" {
			return v
		}
	}
	return ""
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// Project is the project's own waiting page alone (no WAITROOM_PAGES_DIR),
// from the embedded web/pages and catalogs.
func Project() (*Pages, error) {
	msgs, err := Messages()
	if err != nil {
		return nil, err
	}
	return New(Options{Project: ProjectFS(), Messages: msgs})
}

// Default is Project for a server given no Pages: the embedded files are
// the project's, checked by its tests, so an error here is a build's.
func Default() *Pages {
	p, err := Project()
	if err != nil {
		panic(err)
	}
	return p
}

// ProjectFS are the embedded web/pages, for Options.Project.
func ProjectFS() fs.FS {
	project, err := fs.Sub(web.Pages, "pages")
	if err != nil {
		panic(err) // a constant path in an embedded FS
	}
	return project
}

// Messages are the waiting page's embedded catalogs, for Options.Messages.
func Messages() (*i18n.Catalogs, error) {
	fsys, err := fs.Sub(web.Static, "static/i18n")
	if err != nil {
		return nil, err
	}
	return i18n.Load(fsys, "waiting")
}
