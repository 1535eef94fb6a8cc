package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/go-chi/chi/v5"
	"github.com/golang-jwt/jwt/v5"
	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/api"
	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/backoffice/lockout"
	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/hygiene/reqcheck"
	"github.com/waitroom/waitroom/internal/ops/autorate"
	"github.com/waitroom/waitroom/internal/ops/forecast"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/trust/challenge"
	"github.com/waitroom/waitroom/internal/trust/handoff"
	"github.com/waitroom/waitroom/internal/trust/humancheck"
	"github.com/waitroom/waitroom/internal/trust/humancheck/humanchecktest"
	"github.com/waitroom/waitroom/internal/trust/place"
	"github.com/waitroom/waitroom/internal/web/httpkit"
	"github.com/waitroom/waitroom/internal/web/pages"
	"github.com/waitroom/waitroom/internal/web/publicapi"
	"github.com/waitroom/waitroom/web"
)

// The contract test: api/openapi.yaml against the real router over real
// Redis. Every route of the router must be a documented operation and the
// other way round; every documented operation and each of its documented
// statuses must be met by a real request here; every request must be one
// the document accepts (or, for the refusals the document can express,
// one it refuses too), and every response must match the document: a
// documented status, its required headers and its body's schema, in which
// response objects allow no field they do not list.

// contract validates calls against the document and remembers which
// operations answered which statuses.
type contract struct {
	doc  *openapi3.T
	mu   sync.Mutex
	seen map[string]map[int]bool // "GET /path/{param}" -> statuses met
	// clients are the address each env's requests come from
	// (X-Forwarded-For through a trusted loopback proxy), so the admin
	// lockout and the rate limits this test trips are its own, not those
	// of the package's other tests, which all call from 127.0.0.1.
	clients map[*env]string
}

func newContract(t *testing.T) *contract {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(api.OpenAPI)
	if err != nil {
		t.Fatalf("api/openapi.yaml: %v", err)
	}
	if !doc.IsOpenAPI31OrLater() {
		t.Fatalf("api/openapi.yaml is OpenAPI %s, want 3.1", doc.OpenAPI)
	}
	if err := doc.Validate(loader.Context); err != nil {
		t.Fatalf("api/openapi.yaml is not a valid document: %v", err)
	}
	return &contract{doc: doc, seen: map[string]map[int]bool{}, clients: map[*env]string{}}
}

// findRoute is the documented operation of a request: the path template
// whose literal segments equal the request's, with the path parameters
// unescaped. (kin-openapi's routers take /x/{queue}/ for /x/{queue}, which
// are two routes here.)
func (k *contract) findRoute(req *http.Request) (*routers.Route, map[string]string, error) {
	segs := strings.Split(req.URL.EscapedPath(), "/")
	for path, item := range k.doc.Paths.Map() {
		tmpl := strings.Split(path, "/")
		if len(tmpl) != len(segs) || item.GetOperation(req.Method) == nil {
			continue
		}
		params := map[string]string{}
		for i, t := range tmpl {
			if strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}") && segs[i] != "" {
				v, err := url.PathUnescape(segs[i])
				if err != nil {
					return nil, nil, err
				}
				params[strings.Trim(t, "{}")] = v
			} else if t != segs[i] {
				params = nil
				break
			}
		}
		if params != nil {
			return &routers.Route{Spec: k.doc, Path: path, PathItem: item, Method: req.Method, Operation: item.GetOperation(req.Method)}, params, nil
		}
	}
	return nil, nil, routers.ErrPathNotFound
}

// call is one request and what it must get.
type call struct {
	method, path, body string
	header             []string // name, value, ...
	status             int
	code               string // the error code, when status is an error of waitroom's own
	// docRejects: the request breaks the document too (a wrong body, a
	// missing credential), so the document must refuse it.
	docRejects bool
	// sendAgainOn: an answer of this status is sent again (up to 100
	// times) before it is judged: a limit whose bucket earns a token back
	// while a slow machine answers is met by the next call.
	sendAgainOn int
}

// check sends c to e, checks the status and code, validates the request
// and the response against the document and returns the response.
func (k *contract) check(t *testing.T, e *env, c call) response {
	t.Helper()
	name := c.method + " " + c.path
	send := func() *http.Request {
		var body io.Reader
		if c.body != "" {
			body = strings.NewReader(c.body)
		}
		req, err := http.NewRequest(c.method, e.srv.URL+c.path, body)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		req.Header.Set("X-Forwarded-For", k.clients[e])
		for i := 0; i+1 < len(c.header); i += 2 {
			req.Header.Set(c.header[i], c.header[i+1])
		}
		return req
	}

	req := send()
	route, params, err := k.findRoute(req)
	if err != nil {
		t.Fatalf("%s: no documented operation: %v", name, err)
	}
	op := route.Method + " " + route.Path
	reqIn := &openapi3filter.RequestValidationInput{
		Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: authenticate, MultiError: true},
	}
	err = openapi3filter.ValidateRequest(context.Background(), reqIn)
	switch {
	case c.docRejects && err == nil:
		t.Errorf("%s: the document accepts a request the test says it refuses", name)
	case !c.docRejects && err != nil:
		t.Errorf("%s: the document refuses the request: %v", name, err)
	}

	client := &http.Client{Timeout: 20 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	var r response
	for try := 0; ; try++ {
		resp, err := client.Do(send())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		r = response{resp.StatusCode, resp.Header, body}
		if c.sendAgainOn == 0 || r.status != c.sendAgainOn || try == 100 {
			break
		}
	}
	body := r.body
	if r.status != c.status {
		t.Fatalf("%s (%s): status %d, want %d: %s", name, op, r.status, c.status, body)
	}
	if c.code != "" {
		var eb httpkit.ErrorBody
		if err := json.Unmarshal(body, &eb); err != nil || eb.Error.Code != c.code {
			t.Fatalf("%s: error %s, want code %s", name, body, c.code)
		}
	}

	respIn := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: reqIn,
		Status:                 r.status,
		Header:                 r.header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	respIn.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), respIn); err != nil {
		t.Errorf("%s (%s): the response breaks the document: %v\nstatus %d %v\n%.500s", name, op, err, r.status, r.header, body)
	}
	k.mu.Lock()
	if k.seen[op] == nil {
		k.seen[op] = map[int]bool{}
	}
	k.seen[op][r.status] = true
	k.mu.Unlock()
	return r
}

// authenticate is the document's security schemes as the test checks
// them: a bearer scheme needs an Authorization: Bearer header, a cookie
// scheme its cookie ({queue} in its name is the path's queue, or any),
// with or without the __Host- prefix (WAITROOM_COOKIE_SECURE=false).
// Whether the credential is valid is the server's to say.
func authenticate(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	r := in.RequestValidationInput.Request
	s := in.SecurityScheme
	switch {
	case s.Type == "http" && s.Scheme == "bearer":
		if _, ok := reqcheck.BearerToken(r); ok {
			return nil
		}
		return errors.New("no bearer token")
	case s.Type == "apiKey" && s.In == "cookie":
		prefix, perQueue := strings.CutSuffix(strings.TrimPrefix(s.Name, hostPrefix), "{queue}")
		q := in.RequestValidationInput.PathParams["queue"]
		want := prefix
		if perQueue {
			want += q
		}
		for _, c := range r.Cookies() {
			name := strings.TrimPrefix(c.Name, hostPrefix)
			if name == want || perQueue && q == "" && strings.HasPrefix(name, prefix) {
				return nil
			}
		}
		return fmt.Errorf("no cookie %s", want)
	}
	return fmt.Errorf("security scheme %s/%s unknown to the test", s.Type, s.Scheme)
}

// operations are the document's operations, "METHOD /path".
func (k *contract) operations() []string {
	var ops []string
	for path, item := range k.doc.Paths.Map() {
		for method := range item.Operations() {
			ops = append(ops, method+" "+path)
		}
	}
	slices.Sort(ops)
	return ops
}

// wildcard is how a chi catch-all is named in the document's paths (an
// asset's file name).
const wildcard = "{file}"

// routesOf is the router's routes, "METHOD /path". A route for any method
// (HandleFunc) is listed once per method; CONNECT and QUERY, which
// OpenAPI 3.1 cannot describe, are left out.
func routesOf(t *testing.T, h http.Handler) []string {
	t.Helper()
	var out []string
	err := chi.Walk(h.(chi.Routes), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if method == http.MethodConnect || method == "QUERY" {
			return nil
		}
		out = append(out, method+" "+strings.Replace(route, "/*", "/"+wildcard, 1))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// hostPrefix begins a cookie's name when it is Secure (the default).
const hostPrefix = "__Host-"

// newEnv is newEnvWithStore with the real pages (web/static), so the
// pages' content types are the ones users get, behind a trusted loopback
// proxy, with a client address of its own.
func (k *contract) newEnv(t *testing.T, rdb *redis.Client, settings queue.Settings, opts Options) *env {
	t.Helper()
	return k.serve(t, rdb, settings, 1, func(string) Options { return opts })
}

// serve is newEnv with n queues (the env's queue is the first) and the
// options made once the server's URL is known, as an OpenID provider's
// redirect URL needs it: the server listens before it is built.
func (k *contract) serve(t *testing.T, rdb *redis.Client, settings queue.Settings, n int, options func(base string) Options) *env {
	t.Helper()
	name := fmt.Sprintf("oa%d", time.Now().UnixNano())
	names := []string{name}
	for i := 1; i < n; i++ {
		names = append(names, fmt.Sprintf("%s-%d", name, i))
	}
	moves := handoff.NewTracker(rdb, names)
	srv := httptest.NewUnstartedServer(nil)
	t.Cleanup(srv.Close)
	opts := options("http://" + srv.Listener.Addr().String())
	storeOpts := []queue.Option{queue.WithRecentMoves(moves)}
	if opts.Human != nil {
		storeOpts = append(storeOpts, queue.WithHumanCheck(opts.Human.Available))
	}
	store, err := queue.NewStore(rdb, names, settings, testTimeout, storeOpts...)
	if err != nil {
		t.Fatal(err)
	}
	opts.Store, opts.Redis = store, rdb
	opts.Places, opts.Passes = newTrust(t, rdb)
	if opts.APITokens == nil {
		opts.APITokens = newTokens(t, rdb)
	}
	opts.Gate = newTestGate(t, rdb, store, name, opts.Passes, nil, true)
	opts.Handoffs = newHandoffs(t, rdb, store, moves)
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	if opts.Adapt, err = autorate.New(autorate.Options{Store: store, Redis: rdb, Log: opts.Logger, Timeout: testTimeout}); err != nil {
		t.Fatal(err)
	}
	opts.ClientIP = behindProxy(t)
	if opts.Static, err = fs.Sub(web.Static, "static"); err != nil {
		t.Fatal(err)
	}
	h := New(opts)
	srv.Config.Handler = h
	srv.Start()
	e := &env{t: t, srv: srv, h: h, queue: name, store: store, rdb: rdb, secure: opts.CookieSecure,
		places: opts.Places, passes: opts.Passes, tokens: opts.APITokens, opts: opts}
	k.mu.Lock()
	k.clients[e] = testClient(t)
	k.mu.Unlock()
	return e
}

// deadRedis is a client of an address where nothing listens: every call
// fails at once, as when Redis is down.
func deadRedis(t *testing.T) *redis.Client {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1, DialTimeout: time.Second})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

func TestOpenAPIContract(t *testing.T) {
	t.Parallel()
	k := newContract(t)
	rdb := redistest.Client(t)
	e := k.newEnv(t, rdb, slow, Options{AdminToken: adminToken, Join: newJoin(t), TargetURL: "https://shop.example/order", Pages: sitePages(t)})
	q := "/api/v1/queues/" + e.queue
	admin := "/admin/v1/queues/" + e.queue
	auth := bearerHeader(adminToken)
	jsonCT := []string{"Content-Type", "application/json"}
	withJSON := func(h ...string) []string { return append(slices.Clone(jsonCT), h...) }
	ticket := func(r response) publicapi.TicketResponse {
		t.Helper()
		var tk publicapi.TicketResponse
		if err := json.Unmarshal(r.body, &tk); err != nil {
			t.Fatal(err)
		}
		return tk
	}

	t.Run("routes", func(t *testing.T) {
		routes, ops := routesOf(t, e.h.(*Server).mux), k.operations()
		for _, r := range routes {
			if !slices.Contains(ops, r) {
				t.Errorf("route %s is not in api/openapi.yaml", r)
			}
		}
		for _, op := range ops {
			if !slices.Contains(routes, op) {
				t.Errorf("api/openapi.yaml documents %s, which the router does not serve", op)
			}
		}
	})

	t.Run("health and document", func(t *testing.T) {
		k.check(t, e, call{method: "GET", path: "/healthz", status: 200})
		k.check(t, e, call{method: "GET", path: "/readyz", status: 200})
		r := k.check(t, e, call{method: "GET", path: "/api/openapi.yaml", status: 200})
		if !bytes.Equal(r.body, api.OpenAPI) || r.header.Get("Content-Type") != "application/yaml" {
			t.Fatalf("the document served is not api/openapi.yaml (%q)", r.header.Get("Content-Type"))
		}
		k.check(t, e, call{method: "GET", path: "/api/openapi.yaml", header: []string{"If-None-Match", r.header.Get("ETag")}, status: 304})
	})

	t.Run("pages", func(t *testing.T) {
		r := k.check(t, e, call{method: "GET", path: "/", status: 302})
		if r.header.Get("Location") != "/q/"+e.queue {
			t.Fatalf("/ sends to %q", r.header.Get("Location"))
		}
		k.check(t, e, call{method: "GET", path: "/favicon.ico", status: 200})
		k.check(t, e, call{method: "GET", path: "/q/" + e.queue, status: 200})
		k.check(t, e, call{method: "GET", path: "/q/" + e.queue + "?return=%2Forder%3Fevent%3D7", status: 200})
		k.check(t, e, call{method: "GET", path: "/q/" + e.queue + "?return=https%3A%2F%2Fevil.example", status: 400, code: "invalid_return", docRejects: true})
		k.check(t, e, call{method: "GET", path: "/q/" + e.queue + "?return=%2F%2Fevil.example", status: 400, code: "invalid_return", docRejects: true})
		k.check(t, e, call{method: "GET", path: "/q/nope", status: 404, code: "queue_not_found"})
		k.check(t, e, call{method: "GET", path: "/q/nope", header: []string{"Accept", "text/html"}, status: 404})
		k.check(t, e, call{method: "GET", path: "/admin", status: 200})
		// The entry modules, a module each imports, the worker.
		for _, f := range []string{"style.css", "waiting.js", "admin.js", "waiting-flow.js", "admin-messages.js", "i18n.js", "pow-worker.js", "favicon.ico"} {
			k.check(t, e, call{method: "GET", path: "/_waitroom/static/" + f, status: 200})
		}
		k.check(t, e, call{method: "GET", path: "/_waitroom/static/nope.css", status: 404, code: "not_found"})
		// The in-page agent: the versioned address is kept a day, any other
		// revalidated.
		ver := k.check(t, e, call{method: "GET", path: "/agent/v1/version", status: 200})
		var av struct{ Module, Classic string }
		if err := json.Unmarshal(ver.body, &av); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{av.Module, av.Classic} {
			if r := k.check(t, e, call{method: "GET", path: p, status: 200}); r.header.Get("Cache-Control") != "public, max-age=86400" {
				t.Fatalf("%s: Cache-Control %q", p, r.header.Get("Cache-Control"))
			}
		}
		for _, p := range []string{"/agent/v1/waitroom.js", "/agent/v1/waitroom.classic.js?v=old"} {
			r := k.check(t, e, call{method: "GET", path: p, status: 200})
			if r.header.Get("Cache-Control") != "no-cache" {
				t.Fatalf("%s: Cache-Control %q", p, r.header.Get("Cache-Control"))
			}
			k.check(t, e, call{method: "GET", path: p, header: []string{"If-None-Match", r.header.Get("ETag")}, status: 304})
		}
		k.check(t, e, call{method: "GET", path: "/q/" + e.queue + "?lang=ko", status: 200})
		// The operator's files (sitePages): a file, never a template.
		logo := k.check(t, e, call{method: "GET", path: "/_waitroom/site/logo.txt", status: 200})
		k.check(t, e, call{method: "GET", path: "/_waitroom/site/logo.txt", header: []string{"If-Modified-Since", logo.header.Get("Last-Modified")}, status: 304})
		k.check(t, e, call{method: "GET", path: "/_waitroom/site/waiting.html", status: 404, code: "not_found"})
		k.check(t, e, call{method: "GET", path: "/_waitroom/site/nope.png", status: 404, code: "not_found"})
		// A copy the browser has is revalidated, never listed as a directory.
		js := k.check(t, e, call{method: "GET", path: "/_waitroom/static/waiting.js", status: 200})
		k.check(t, e, call{method: "GET", path: "/_waitroom/static/waiting.js", header: []string{"If-None-Match", js.header.Get("ETag")}, status: 304})
		r = e.do("GET", "/_waitroom/static/", "")
		if r.status != 404 || strings.Contains(string(r.body), "waiting.js") {
			t.Fatalf("the assets' directory: %d %s", r.status, r.body)
		}
	})

	var admitted publicapi.TicketResponse // holds an entry pass
	t.Run("queue", func(t *testing.T) {
		for _, p := range []string{q, q + "/"} {
			k.check(t, e, call{method: "GET", path: p, status: 200})
		}
		k.check(t, e, call{method: "GET", path: "/api/v1/queues/nope", status: 404, code: "queue_not_found"})
		k.check(t, e, call{method: "GET", path: "/api/v1/queues/nope/", status: 404, code: "queue_not_found"})
		k.check(t, e, call{method: "GET", path: q + "/challenge", status: 200})
		k.check(t, e, call{method: "GET", path: "/api/v1/queues/nope/challenge", status: 404, code: "queue_not_found"})

		// The bucket's two tokens admit the first two; then the line.
		admitted = ticket(k.check(t, e, call{method: "POST", path: q + "/enter", body: "{}", header: jsonCT, status: 200}))
		if admitted.Status != queue.Entered || admitted.Pass == "" || admitted.TargetURL == "" || admitted.PlaceToken == "" {
			t.Fatalf("first enter: %+v", admitted)
		}
		k.check(t, e, call{method: "POST", path: q + "/enter", header: jsonCT, status: 200}) // empty body
		browser := k.check(t, e, call{method: "POST", path: q + "/enter", body: `{}`, header: withJSON("Sec-Fetch-Site", "same-origin"), status: 200})
		if tk := ticket(browser); tk.Status != queue.Waiting || tk.Position != 1 {
			t.Fatalf("third enter: %+v", tk)
		}
		c := placeCookie(t, browser, e.queue)
		cookie := []string{"Cookie", c.Name + "=" + c.Value}
		joinTok := mintJoin(t, jwt.SigningMethodHS256, []byte(joinSecret), jwt.MapClaims{"sub": "alice", "aud": e.queue, "exp": time.Now().Add(time.Hour).Unix()})
		app := ticket(k.check(t, e, call{method: "POST", path: q + "/enter", body: `{"join_token":"` + joinTok + `"}`, header: jsonCT, status: 200}))
		k.check(t, e, call{method: "POST", path: q + "/enter", body: "{}", header: withJSON(cookie...), status: 200}) // to the back

		for _, bad := range []call{
			{body: `{"user_id":"x","admin":true}`, status: 400, code: "invalid_json", docRejects: true},
			{body: `[1]`, status: 400, code: "invalid_json", docRejects: true},
			{body: `{"user_id":"x","join_token":"y"}`, status: 400, code: "invalid_json", docRejects: true},
			{body: `{"user_id":"x"}`, status: 400, code: "user_ids_disabled"},
			{body: `{"join_token":"a.b.c"}`, status: 400, code: "invalid_join_token"},
			{body: `{}`, header: bearerHeader("not-a-place"), status: 401, code: "invalid_place"},
			{body: `{}`, header: []string{"Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"}, status: 403, code: "cross_site_request"},
			{body: `{"user_id":"` + strings.Repeat("x", 5000) + `"}`, status: 413, code: "body_too_large", docRejects: true},
			{body: `{}`, header: []string{"Content-Type", "text/plain"}, status: 415, code: "unsupported_media_type", docRejects: true},
		} {
			bad.method, bad.path = "POST", q+"/enter"
			if len(bad.header) == 0 || bad.header[0] != "Content-Type" {
				bad.header = withJSON(bad.header...)
			}
			k.check(t, e, bad)
		}
		k.check(t, e, call{method: "POST", path: "/api/v1/queues/nope/enter", body: "{}", header: jsonCT, status: 404, code: "queue_not_found"})

		k.check(t, e, call{method: "GET", path: q + "/status", header: cookie, status: 200})
		if tk := ticket(k.check(t, e, call{method: "GET", path: q + "/status", header: bearerHeader(app.PlaceToken), status: 200})); tk.UserID == "" {
			t.Fatalf("status of the joined place: %+v", tk)
		}
		k.check(t, e, call{method: "GET", path: q + "/status?user_id=x", status: 400, code: "user_ids_disabled"})
		// The line's public document: none before the replica has read
		// the line, then the same for everyone, and 304 for its ETag.
		k.check(t, e, call{method: "GET", path: q + "/line", status: 503, code: "unavailable"})
		if err := e.store.RefreshSnapshot(context.Background(), e.queue, true); err != nil {
			t.Fatal(err)
		}
		doc := k.check(t, e, call{method: "GET", path: q + "/line", header: cookie, status: 200})
		k.check(t, e, call{method: "GET", path: q + "/line", header: []string{"If-None-Match", doc.header.Get("ETag")}, status: 304})
		k.check(t, e, call{method: "GET", path: "/api/v1/queues/nope/line", status: 404, code: "queue_not_found"})
		k.check(t, e, call{method: "GET", path: q + "/status", status: 401, code: "invalid_place"})
		k.check(t, e, call{method: "GET", path: q + "/status", header: bearerHeader("forged"), status: 401, code: "invalid_place"})
		k.check(t, e, call{method: "GET", path: "/api/v1/queues/nope/status", header: cookie, status: 404, code: "queue_not_found"})

		k.check(t, e, call{method: "DELETE", path: q + "/place", header: append(slices.Clone(cookie), "Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"), status: 403, code: "cross_site_request"})
		r := k.check(t, e, call{method: "DELETE", path: q + "/place", header: cookie, status: 204})
		if got := r.header.Get("Set-Cookie"); !strings.Contains(got, "Max-Age=0") {
			t.Fatalf("leave kept the cookie: %q", got)
		}
		k.check(t, e, call{method: "DELETE", path: q + "/place", header: bearerHeader("forged"), status: 401, code: "invalid_place"})
		k.check(t, e, call{method: "DELETE", path: q + "/place", status: 401, code: "invalid_place", docRejects: true})
		k.check(t, e, call{method: "DELETE", path: "/api/v1/queues/nope/place", header: bearerHeader(app.PlaceToken), status: 404, code: "queue_not_found"})

		k.check(t, e, call{method: "DELETE", path: q + "/users/bob", status: 400, code: "user_ids_disabled"})

		// Hand-overs to another device (their success: TestHandoffOverHTTP).
		k.check(t, e, call{method: "POST", path: q + "/handoff", header: bearerHeader("forged"), status: 401, code: "invalid_place"})
		k.check(t, e, call{method: "POST", path: q + "/handoff", status: 401, code: "invalid_place", docRejects: true})
		k.check(t, e, call{method: "GET", path: q + "/handoff/qr?token=x", header: bearerHeader("forged"), status: 401, code: "invalid_place"})
		k.check(t, e, call{method: "GET", path: q + "/handoff/qr?token=x", header: bearerHeader(app.PlaceToken), status: 400, code: "invalid_handoff"})
		k.check(t, e, call{method: "POST", path: q + "/enter", body: `{"handoff":"ABCD-EFGH"}`, header: jsonCT, status: 400, code: "invalid_handoff"})
		k.check(t, e, call{method: "POST", path: q + "/enter", body: `{"handoff":"x","join_token":"y"}`, header: jsonCT, status: 400, code: "invalid_json", docRejects: true})
	})

	t.Run("draw", func(t *testing.T) {
		d := k.newEnv(t, rdb, slow, Options{AdminToken: adminToken, InsecureUserIDs: true})
		dq, dadmin := "/api/v1/queues/"+d.queue, "/admin/v1/queues/"+d.queue
		k.check(t, d, call{method: "GET", path: "/q/" + d.queue + "/verify", status: 200})
		k.check(t, d, call{method: "GET", path: "/q/nope/verify", status: 404, code: "queue_not_found"})
		k.check(t, d, call{method: "GET", path: dq + "/draw", status: 404, code: "no_draw"})
		k.check(t, d, call{method: "GET", path: "/api/v1/queues/nope/draw", status: 404, code: "queue_not_found"})
		now, _ := rdb.Time(context.Background()).Result()
		at := func(dt time.Duration) string { return now.Add(dt).UTC().Format(time.RFC3339Nano) }
		patch := func(body string, status int, code string) {
			t.Helper()
			k.check(t, d, call{method: "PATCH", path: dadmin, body: body, header: withJSON(auth...), status: status, code: code})
		}
		patch(`{"prequeue_from":"`+at(-time.Minute)+`","opens_at":"`+at(time.Hour)+`"}`, 200, "")
		for _, u := range []string{"d1", "d2", "d3", "d4", "d5"} {
			r := k.check(t, d, call{method: "POST", path: dq + "/enter", body: `{"user_id":"` + u + `"}`, header: jsonCT, status: 200})
			if tk := ticket(r); len(tk.DrawCommitment) != 64 {
				t.Fatalf("an enter into the pre-queue: %s", r.body)
			}
		}
		k.check(t, d, call{method: "GET", path: dq + "/status?user_id=d1", status: 200})
		k.check(t, d, call{method: "GET", path: dadmin, header: auth, status: 200}) // draw_sealed
		patch(`{"prequeue_from":"`+at(time.Minute)+`","opens_at":"`+at(time.Hour)+`"}`, 409, "draw_sealed")
		patch(`{"opens_at":"`+at(-time.Millisecond)+`"}`, 200, "")
		if _, err := d.store.Tick(context.Background(), d.queue); err != nil {
			t.Fatal(err)
		}
		first := k.check(t, d, call{method: "GET", path: dq + "/draw?limit=2", status: 200})
		var page publicapi.DrawResponse
		if err := json.Unmarshal(first.body, &page); err != nil || page.NextCursor == "" || len(page.Entries) != 2 {
			t.Fatalf("the draw's first page: %s", first.body)
		}
		k.check(t, d, call{method: "GET", path: dq + "/draw?limit=2", header: []string{"If-None-Match", first.header.Get("ETag")}, status: 304})
		k.check(t, d, call{method: "GET", path: dq + "/draw?limit=2&cursor=" + page.NextCursor, status: 200})
		k.check(t, d, call{method: "GET", path: dq + "/draw", status: 200})
		k.check(t, d, call{method: "GET", path: dq + "/draw?limit=0", status: 400, code: "invalid_limit", docRejects: true})
		k.check(t, d, call{method: "GET", path: dq + "/draw?cursor=x", status: 400, code: "invalid_cursor", docRejects: true})
		k.check(t, d, call{method: "GET", path: dq + "/draw?cursor=9.1", status: 400, code: "invalid_cursor"})
		for _, u := range []string{"d1", "d2", "d3", "d4", "d5"} {
			k.check(t, d, call{method: "GET", path: dq + "/status?user_id=" + u, status: 200}) // draw_key, draw_place
		}
		k.check(t, d, call{method: "GET", path: dadmin, header: auth, status: 200}) // draw_seed, draw_commitment
	})

	t.Run("passes", func(t *testing.T) {
		pass := bearerHeader(admitted.Pass)
		k.check(t, e, call{method: "GET", path: "/.well-known/jwks.json", status: 200})
		verify := "/api/v1/verify?queue=" + e.queue
		r := k.check(t, e, call{method: "GET", path: verify, header: pass, status: 200})
		var v publicapi.VerifyResponse
		if err := json.Unmarshal(r.body, &v); err != nil || v.Queue != e.queue || v.Sub != admitted.UserID {
			t.Fatalf("verify: %s", r.body)
		}
		k.check(t, e, call{method: "GET", path: verify, status: 401, code: "invalid_pass", docRejects: true})
		k.check(t, e, call{method: "GET", path: verify, header: bearerHeader("forged"), status: 401, code: "invalid_pass"})
		k.check(t, e, call{method: "GET", path: "/api/v1/verify?queue=other", header: pass, status: 401, code: "invalid_pass"})
		k.check(t, e, call{method: "GET", path: "/api/v1/verify", header: pass, status: 400, code: "queue_required", docRejects: true})

		r = k.check(t, e, call{method: "GET", path: "/gate/verify", header: pass, status: 204})
		if r.header.Get(gate.HeaderSub) != admitted.UserID {
			t.Fatalf("forward auth names %q", r.header.Get(gate.HeaderSub))
		}
		k.check(t, e, call{method: "GET", path: "/gate/verify", header: []string{"Cookie", e.passCookieName() + "=" + admitted.Pass}, status: 204})
		k.check(t, e, call{method: "GET", path: "/gate/verify", status: 401})
		k.check(t, e, call{method: "GET", path: "/gate/verify", header: append(slices.Clone(pass), gate.HeaderOriginalURI, "/a/../b"), status: 401})
		k.check(t, e, call{method: "GET", path: "/gate/refused", header: []string{gate.HeaderOriginalURI, "/static/%2e%2e/order"}, status: 400})

		orig := []string{gate.HeaderOriginalURI, "/order?event=7"}
		r = k.check(t, e, call{method: "GET", path: "/gate/refused", header: append(slices.Clone(orig), "Cookie", e.passCookieName()+"=stale"), status: 303})
		if want := "/q/" + e.queue + "?return=" + url.QueryEscape("/order?event=7"); r.header.Get("Location") != want {
			t.Fatalf("refused sends to %q, want %q", r.header.Get("Location"), want)
		}
		k.check(t, e, call{method: "HEAD", path: "/gate/refused", header: orig, status: 303})
		k.check(t, e, call{method: "GET", path: "/gate/refused", header: []string{"Accept", "application/json"}, status: 401})
		for _, m := range []string{"HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"} {
			k.check(t, e, call{method: m, path: "/gate/refused", header: bearerHeader("forged"), status: 401})
		}

		cmds := q + "/commands"
		k.check(t, e, call{method: "POST", path: cmds, body: `{"command":"done"}`, header: withJSON(), status: 401, code: "invalid_pass", docRejects: true})
		k.check(t, e, call{method: "POST", path: cmds, body: `{"command":"launch"}`, header: withJSON(pass...), status: 400, code: "invalid_command", docRejects: true})
		k.check(t, e, call{method: "POST", path: cmds, body: `{"command":"done","x":1}`, header: withJSON(pass...), status: 400, code: "invalid_json", docRejects: true})
		k.check(t, e, call{method: "POST", path: cmds, body: `{"command":"done","pad":"` + strings.Repeat("x", 5000) + `"}`, header: withJSON(pass...), status: 413, code: "body_too_large", docRejects: true})
		k.check(t, e, call{method: "POST", path: "/api/v1/queues/nope/commands", body: `{"command":"done"}`, header: withJSON(pass...), status: 404, code: "queue_not_found"})
		// Without sliding sessions, extend changes nothing; past the pass's
		// budget, 429.
		r = k.check(t, e, call{method: "POST", path: cmds, body: `{"command":"extend"}`, header: withJSON(pass...), status: 200})
		if !strings.Contains(string(r.body), `"result":"unsupported"`) {
			t.Fatalf("extend without sliding sessions: %s", r.body)
		}
		k.check(t, e, call{method: "POST", path: cmds, body: `{"command":"extend"}`, header: withJSON(pass...), status: 429, code: "too_many_commands", sendAgainOn: 200})
		k.check(t, e, call{method: "POST", path: q + "/done", status: 401, code: "invalid_pass", docRejects: true})
		k.check(t, e, call{method: "POST", path: "/api/v1/queues/nope/done", header: pass, status: 404, code: "queue_not_found"})
		for range 2 { // done again is done already
			k.check(t, e, call{method: "POST", path: q + "/done", header: pass, status: 204})
		}
		k.check(t, e, call{method: "POST", path: q + "/done", header: pass, status: 429, code: "too_many_commands", sendAgainOn: 204})
		k.check(t, e, call{method: "GET", path: verify, header: pass, status: 401, code: "invalid_pass"})
	})

	t.Run("admin", func(t *testing.T) {
		k.check(t, e, call{method: "GET", path: "/admin/v1/queues", header: auth, status: 200})
		k.check(t, e, call{method: "GET", path: "/admin/v1/settings/catalog", header: auth, status: 200})
		k.check(t, e, call{method: "GET", path: admin, header: auth, status: 200})
		k.check(t, e, call{method: "GET", path: "/admin/v1/queues/nope", header: auth, status: 404, code: "queue_not_found"})

		patch := func(body string, status int, code string, docRejects bool) response {
			t.Helper()
			return k.check(t, e, call{method: "PATCH", path: admin, body: body, header: withJSON(auth...), status: status, code: code, docRejects: docRejects})
		}
		r := patch(`{"max_waiting":100,"paused":true,"abandon_after_ms":60000,"opens_at":null,"prequeue_from":""}`, 200, "", false)
		var aq adminQueueJSON
		if err := json.Unmarshal(r.body, &aq); err != nil || aq.MaxWaiting != 100 || !aq.Paused {
			t.Fatalf("patch: %s", r.body)
		}
		// Paused: the ticket says so, and promises no time.
		r = k.check(t, e, call{method: "POST", path: q + "/enter", body: "{}", header: jsonCT, status: 200})
		if tk := ticket(r); !tk.Paused || tk.ETASeconds != nil || tk.ETALowSeconds != nil || tk.ETAHighSeconds != nil {
			t.Fatalf("enter while paused: %s", r.body)
		}
		patch(`{"paused":false,"max_active":0,"refill_size":2}`, 200, "", false)
		patch(`{"refill_size":0}`, 400, "invalid_settings", true)
		patch(`{"refillSize":2}`, 400, "invalid_settings", true)
		patch(`{}`, 400, "invalid_settings", true)
		patch(`{"opens_at":"2030-01-01T10:00:00Z","prequeue_from":"2030-01-01T11:00:00Z"}`, 400, "invalid_settings", false)
		patch(`[1]`, 400, "invalid_json", true)
		patch(`{"paused":true,"pad":"`+strings.Repeat("x", 5000)+`"}`, 413, "body_too_large", true)
		k.check(t, e, call{method: "PATCH", path: "/admin/v1/queues/nope", body: `{"paused":false}`, header: withJSON(auth...), status: 404, code: "queue_not_found"})

		put := admin + "/refill-size"
		k.check(t, e, call{method: "PUT", path: put, body: `{"refill_size":3}`, header: withJSON(auth...), status: 200})
		k.check(t, e, call{method: "PUT", path: put, body: `{"refill_size":0}`, header: withJSON(auth...), status: 400, code: "invalid_refill_size", docRejects: true})
		k.check(t, e, call{method: "PUT", path: put, body: `{"refill_size":"3"}`, header: withJSON(auth...), status: 400, code: "invalid_json", docRejects: true})
		k.check(t, e, call{method: "PUT", path: put, body: `{"refill_size":3,"pad":"` + strings.Repeat("x", 5000) + `"}`, header: withJSON(auth...), status: 413, code: "body_too_large", docRejects: true})
		k.check(t, e, call{method: "PUT", path: "/admin/v1/queues/nope/refill-size", body: `{"refill_size":3}`, header: withJSON(auth...), status: 404, code: "queue_not_found"})

		if _, err := e.store.Tick(context.Background(), e.queue); err != nil {
			t.Fatal(err)
		}
		k.check(t, e, call{method: "GET", path: admin + "/history", header: auth, status: 200})
		k.check(t, e, call{method: "GET", path: "/admin/v1/queues/nope/history", header: auth, status: 404, code: "queue_not_found"})
		k.check(t, e, call{method: "GET", path: admin + "/history?format=csv", header: auth, status: 200})
		k.check(t, e, call{method: "GET", path: admin + "/history?format=xml", header: auth, status: 400, code: "invalid_format", docRejects: true})

		r = k.check(t, e, call{method: "DELETE", path: admin + "/users/" + url.PathEscape(admitted.UserID), header: auth, status: 204})
		k.check(t, e, call{method: "DELETE", path: admin + "/users/a%01b", header: auth, status: 400, code: "invalid_user_id"})
		k.check(t, e, call{method: "DELETE", path: "/admin/v1/queues/nope/users/bob", header: auth, status: 404, code: "queue_not_found"})

		r = k.check(t, e, call{method: "GET", path: admin + "/audit?limit=10", header: auth, status: 200})
		var log struct {
			Entries []json.RawMessage `json:"entries"`
		}
		if err := json.Unmarshal(r.body, &log); err != nil || len(log.Entries) != 5 {
			t.Fatalf("audit log of the order page's done, two settings changes, a refill size and a removal: %s", r.body)
		}
		k.check(t, e, call{method: "GET", path: admin + "/audit", header: auth, status: 200})
		k.check(t, e, call{method: "GET", path: admin + "/defences", header: auth, status: 200})
		k.check(t, e, call{method: "GET", path: "/admin/v1/queues/nope/defences", header: auth, status: 404, code: "queue_not_found"})
		k.check(t, e, call{method: "GET", path: admin + "/audit?limit=0", header: auth, status: 400, code: "invalid_limit", docRejects: true})
		// Lanes, windows and the forecast.
		patch(`{"lanes":[{"name":"priority","share":0.3}]}`, 200, "", false)
		// One account, one place per queue: bob's place in the general
		// line refuses his lane's join token.
		bob := func(claims jwt.MapClaims) string {
			claims["sub"], claims["aud"], claims["exp"] = "bob", e.queue, time.Now().Add(time.Hour).Unix()
			return `{"join_token":"` + mintJoin(t, jwt.SigningMethodHS256, []byte(joinSecret), claims) + `"}`
		}
		k.check(t, e, call{method: "POST", path: q + "/enter", body: bob(jwt.MapClaims{}), header: jsonCT, status: 200})
		k.check(t, e, call{method: "POST", path: q + "/enter", body: bob(jwt.MapClaims{"lane": "priority"}), header: jsonCT, status: 409, code: "place_in_other_line"})
		patch(`{"lanes":[{"name":"a","share":0.7},{"name":"b","share":0.4}]}`, 400, "invalid_lanes", false)
		patch(`{"lanes":[{"name":"Bad","share":0.3}]}`, 400, "invalid_lanes", true)
		k.check(t, e, call{method: "GET", path: admin + "/history", header: auth, status: 200}) // with its lanes' own
		sched := admin + "/schedule"
		k.check(t, e, call{method: "PUT", path: sched, body: `{"windows":[{"start":"2030-01-01T09:00:00Z","end":"2030-01-01T10:00:00Z","refill_size":40,"paused":false,"lanes":[{"name":"priority","share":0.5}]}]}`,
			header: withJSON(auth...), status: 200})
		k.check(t, e, call{method: "PUT", path: sched, body: `{"windows":[{"start":"2030-01-01T09:00:00Z","end":"2030-01-01T10:00:00Z"},{"start":"2030-01-01T09:30:00Z","end":"2030-01-01T11:00:00Z"}]}`,
			header: withJSON(auth...), status: 400, code: "invalid_schedule"})
		k.check(t, e, call{method: "PUT", path: sched, body: `{"windows":[{"start":"tomorrow"}]}`, header: withJSON(auth...), status: 400, code: "invalid_json", docRejects: true})
		k.check(t, e, call{method: "GET", path: sched, header: auth, status: 200})
		k.check(t, e, call{method: "GET", path: admin + "/forecast?refill_size=40", header: auth, status: 200})
		k.check(t, e, call{method: "GET", path: admin + "/forecast?refill_size=40&lane=priority", header: auth, status: 200})
		k.check(t, e, call{method: "GET", path: admin + "/forecast?refill_size=0", header: auth, status: 400, code: "invalid_forecast", docRejects: true})
		k.check(t, e, call{method: "GET", path: admin + "/forecast?refill_size=4&lane=nope", header: auth, status: 400, code: "invalid_forecast"})
		k.check(t, e, call{method: "PUT", path: sched, body: `{"windows":[]}`, header: withJSON(auth...), status: 200})
		patch(`{"lanes":[]}`, 200, "", false)

		k.check(t, e, call{method: "GET", path: "/admin/v1/queues/nope/schedule", header: auth, status: 404, code: "queue_not_found"})
		k.check(t, e, call{method: "PUT", path: "/admin/v1/queues/nope/schedule", body: `{"windows":[]}`, header: withJSON(auth...), status: 404, code: "queue_not_found"})
		k.check(t, e, call{method: "GET", path: "/admin/v1/queues/nope/forecast?refill_size=3", header: auth, status: 404, code: "queue_not_found"})
		// Forecasts are limited per credential: a burst is refused with
		// when to ask again.
		for i := 0; ; i++ {
			if i > forecast.PerCredential+100 {
				t.Fatal("forecasts were never limited")
			}
			if r := e.do("GET", admin+"/forecast?refill_size=5", "", auth...); r.status == http.StatusTooManyRequests {
				break
			}
		}
		if r := k.check(t, e, call{method: "GET", path: admin + "/forecast?refill_size=5", header: auth, status: 429, code: "rate_limited", sendAgainOn: http.StatusOK}); r.header.Get("Retry-After") == "" {
			t.Fatal("a limited forecast without Retry-After")
		}
		k.check(t, e, call{method: "GET", path: sched, status: 401, code: "unauthorized", docRejects: true})
		k.check(t, e, call{method: "PUT", path: sched, body: `{"windows":[]}`, header: jsonCT, status: 401, code: "unauthorized", docRejects: true})
		k.check(t, e, call{method: "GET", path: admin + "/forecast?refill_size=3", status: 401, code: "unauthorized", docRejects: true})
		// The queue's text on its waiting page, by language.
		r = patch(`{"title":{"en":"Seollal holiday trains: Seoul → Busan","ko":"설 명절 열차"},"message":{"en":"Sales open at 07:00\nBe ready."}}`, 200, "", false)
		if err := json.Unmarshal(r.body, &aq); err != nil || aq.Title["ko"] != "설 명절 열차" || aq.Message["en"] != "Sales open at 07:00\nBe ready." {
			t.Fatalf("patch text: %s", r.body)
		}
		patch(`{"title":{"fr":"Trains"}}`, 400, "invalid_settings", true)
		patch(`{"title":{"en":"`+strings.Repeat("x", 121)+`"}}`, 400, "invalid_settings", true)
		patch(`{"title":{"en":"two\nlines"}}`, 400, "invalid_settings", false)
		patch(`{"message":{"en":"\u202eevil"}}`, 400, "invalid_settings", false)
		patch(`{"title":"Trains"}`, 400, "invalid_settings", true)
		patch(`{"title":null,"message":{}}`, 200, "", false)
		k.check(t, e, call{method: "GET", path: admin + "/audit?limit=ten", header: auth, status: 400, code: "invalid_limit", docRejects: true})
		k.check(t, e, call{method: "GET", path: "/admin/v1/queues/nope/audit", header: auth, status: 404, code: "queue_not_found"})

		// The site's own health (internal/ops/autorate).
		origin := admin + "/origin"
		k.check(t, e, call{method: "POST", path: origin, body: `{"p95_ms":350.5,"error_rate":0.01}`, header: withJSON(auth...), status: 204})
		k.check(t, e, call{method: "POST", path: origin, body: `{"p95_ms":350`, header: withJSON(auth...), status: 400, code: "invalid_json", docRejects: true})
		k.check(t, e, call{method: "POST", path: origin, body: `{"p95_ms":-1,"error_rate":0}`, header: withJSON(auth...), status: 400, code: "invalid_origin_report", docRejects: true})
		k.check(t, e, call{method: "POST", path: origin, body: `{"p95_ms":1,"error_rate":2}`, header: withJSON(auth...), status: 400, code: "invalid_origin_report", docRejects: true})
		k.check(t, e, call{method: "POST", path: origin, body: `{"p95_ms":1,"pad":"` + strings.Repeat("x", 5000) + `"}`, header: withJSON(auth...), status: 413, code: "body_too_large", docRejects: true})
		k.check(t, e, call{method: "POST", path: "/admin/v1/queues/nope/origin", body: `{"p95_ms":1,"error_rate":0}`, header: withJSON(auth...), status: 404, code: "queue_not_found"})
		k.check(t, e, call{method: "PATCH", path: admin, body: `{"adapt_enabled":true,"origin_target_p95_ms":800,"origin_max_error_rate":0.05,"min_refill_size":1,"origin_probe_url":"https://shop.example/health"}`,
			header: withJSON(auth...), status: 200})
		k.check(t, e, call{method: "PATCH", path: admin, body: `{"adapt_enabled":false,"origin_probe_url":null}`, header: withJSON(auth...), status: 200})

		// Sold out: the line closes with a message, and reopens.
		k.check(t, e, call{method: "POST", path: admin + "/close", body: `{"message":{"en":"Sold out","ko":"매진"},"reopens_at":null}`, header: withJSON(auth...), status: 200})
		k.check(t, e, call{method: "POST", path: "/api/v1/queues/" + e.queue + "/enter", body: "{}", header: jsonCT, status: 410, code: "sale_closed"})
		// The gate's sold-out page, once the snapshot (each tick's) says so.
		if err := e.store.RefreshSnapshot(t.Context(), e.queue, true); err != nil {
			t.Fatal(err)
		}
		soldOut := []string{gate.HeaderOriginalURI, "/order?event=7", "Accept", "text/html"}
		k.check(t, e, call{method: "GET", path: "/gate/refused", header: soldOut, status: 410})
		k.check(t, e, call{method: "HEAD", path: "/gate/refused", header: soldOut, status: 410})
		k.check(t, e, call{method: "GET", path: "/gate/refused", header: []string{"Accept", "application/json"}, status: 410, code: "sale_closed"})
		k.check(t, e, call{method: "POST", path: admin + "/close", body: `{"message":{}}`, header: withJSON(auth...), status: 400, code: "invalid_settings"})
		k.check(t, e, call{method: "POST", path: admin + "/close", body: `{"message":1}`, header: withJSON(auth...), status: 400, code: "invalid_json", docRejects: true})
		k.check(t, e, call{method: "POST", path: admin + "/close", body: `{"message":{"en":"x"},"pad":"` + strings.Repeat("x", 5000) + `"}`, header: withJSON(auth...), status: 413, code: "body_too_large", docRejects: true})
		k.check(t, e, call{method: "POST", path: "/admin/v1/queues/nope/close", body: `{"message":{"en":"x"}}`, header: withJSON(auth...), status: 404, code: "queue_not_found"})
		k.check(t, e, call{method: "POST", path: admin + "/reopen", header: auth, status: 200})
		k.check(t, e, call{method: "POST", path: "/admin/v1/queues/nope/reopen", header: auth, status: 404, code: "queue_not_found"})
		if err := e.store.RefreshSnapshot(t.Context(), e.queue, true); err != nil {
			t.Fatal(err)
		}
		k.check(t, e, call{method: "GET", path: "/gate/refused", header: soldOut, status: 303})
	})

	// adminCalls are one valid request per admin operation, for the
	// refusals every one of them answers alike.
	adminCalls := func(e *env) []call {
		p := "/admin/v1/queues/" + e.queue
		return []call{
			{method: "GET", path: "/admin/v1/queues"},
			{method: "GET", path: "/admin/v1/settings/catalog"},
			{method: "GET", path: p},
			{method: "PATCH", path: p, body: `{"paused":false}`, header: jsonCT},
			{method: "PUT", path: p + "/refill-size", body: `{"refill_size":2}`, header: jsonCT},
			{method: "GET", path: p + "/history"},
			{method: "GET", path: p + "/audit"},
			{method: "GET", path: p + "/defences"},
			{method: "DELETE", path: p + "/users/bob"},
			{method: "POST", path: p + "/origin", body: `{"p95_ms":120,"error_rate":0}`, header: jsonCT},
			{method: "POST", path: p + "/close", body: `{"message":{"en":"Sold out"}}`, header: jsonCT},
			{method: "POST", path: p + "/reopen"},
			{method: "POST", path: p + "/codes", body: `{"lane":"vip","n":1}`, header: jsonCT},
			{method: "GET", path: p + "/codes"},
			{method: "DELETE", path: p + "/codes/0123456789abcdef"},
			{method: "GET", path: "/admin/v1/me"},
			{method: "POST", path: "/admin/v1/tokens", body: `{"name":"ci","role":"viewer"}`, header: jsonCT},
			{method: "GET", path: "/admin/v1/tokens"},
			{method: "DELETE", path: "/admin/v1/tokens/" + strings.Repeat("a", 16)},
			{method: "DELETE", path: "/admin/v1/sessions/kim@example.com"},
		}
	}

	t.Run("admin refusals", func(t *testing.T) {
		// Each from an address of its own: two failures lock nobody out.
		for _, c := range adminCalls(e) {
			c.header = append(c.header, "X-Forwarded-For", testClient(t))
			c.status, c.code, c.docRejects = 401, "unauthorized", true
			k.check(t, e, c)
			c.header, c.docRejects = append(slices.Clone(c.header), bearerHeader("wrong")...), false
			k.check(t, e, c)
		}
		off := k.newEnv(t, rdb, slow, Options{})
		for _, c := range adminCalls(off) {
			c.header = append(c.header, auth...)
			c.status, c.code = 403, "admin_disabled"
			k.check(t, off, c)
		}
		// Another site's page is refused, right token or not.
		for i, c := range adminCalls(e) {
			foreign := []string{"Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"}
			if i%2 == 1 { // an older browser, without Sec-Fetch-Site
				foreign = foreign[2:]
			}
			c.header = append(slices.Clone(c.header), append(foreign, auth...)...)
			c.status, c.code = 403, "cross_site_admin"
			k.check(t, e, c)
		}
		// A client that failed ten times is locked out, right token or not.
		locked := k.newEnv(t, rdb, slow, Options{AdminToken: adminToken, ClientIP: behindProxy(t)})
		client := testClient(t)
		for range lockout.DefaultPolicy.MaxFailures {
			k.check(t, locked, call{method: "GET", path: "/admin/v1/queues", header: asClient(client, "wrong"), status: 401, code: "unauthorized"})
		}
		for _, c := range adminCalls(locked) {
			c.header = append(c.header, asClient(client, adminToken)...)
			c.status, c.code = 429, "too_many_attempts"
			k.check(t, locked, c)
		}
	})

	// Roles, API tokens and sign-in through a real OpenID provider
	// (openapi_admin_test.go).
	t.Run("codes", func(t *testing.T) { k.checkCodes(t, rdb, e) })
	t.Run("roles and tokens", func(t *testing.T) { k.checkRoles(t, rdb) })
	t.Run("too many tokens", func(t *testing.T) { k.checkTooManyTokens(t, rdb) })
	t.Run("sign-in", func(t *testing.T) { k.checkSignIn(t, rdb, e) })

	t.Run("defences", func(t *testing.T) {
		// The line's cap.
		full := k.newEnv(t, rdb, queue.Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour}, Options{AdminToken: adminToken})
		fq := "/api/v1/queues/" + full.queue
		k.check(t, full, call{method: "PATCH", path: "/admin/v1/queues/" + full.queue, body: `{"max_waiting":1}`, header: withJSON(auth...), status: 200})
		for range 2 { // admitted, then the one place in line
			k.check(t, full, call{method: "POST", path: fq + "/enter", body: "{}", header: jsonCT, status: 200})
		}
		k.check(t, full, call{method: "POST", path: fq + "/enter", body: "{}", header: jsonCT, status: 503, code: "queue_full"})

		// Proof of work.
		k.check(t, full, call{method: "PATCH", path: "/admin/v1/queues/" + full.queue, body: `{"max_waiting":0,"challenge_difficulty":8}`, header: withJSON(auth...), status: 200})
		k.check(t, full, call{method: "POST", path: fq + "/enter", body: "{}", header: jsonCT, status: 403, code: "challenge_required"})
		var ch publicapi.ChallengeResponse
		if err := json.Unmarshal(k.check(t, full, call{method: "GET", path: fq + "/challenge", status: 200}).body, &ch); err != nil || ch.Difficulty != 8 {
			t.Fatalf("challenge: %+v %v", ch, err)
		}
		solved := `{"challenge":"` + ch.Challenge + `","nonce":"` + challenge.Solve(ch.Challenge, 8) + `"}`
		k.check(t, full, call{method: "POST", path: fq + "/enter", body: solved, header: jsonCT, status: 200})
		k.check(t, full, call{method: "POST", path: fq + "/enter", body: solved, header: jsonCT, status: 403, code: "challenge_required"})

		// The human check: asked of everyone, then refused, then passed.
		sp := humanchecktest.NewServer(t)
		checker, err := humancheck.New(sp.Options(humancheck.Turnstile, humanchecktest.DefaultHostname), rdb, nil)
		if err != nil {
			t.Fatal(err)
		}
		human := k.newEnv(t, rdb, queue.Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour}, Options{AdminToken: adminToken, Human: checker})
		hq := "/api/v1/queues/" + human.queue
		k.check(t, human, call{method: "PATCH", path: "/admin/v1/queues/" + human.queue, body: `{"human_check":"always"}`, header: withJSON(auth...), status: 200})
		k.check(t, human, call{method: "GET", path: hq + "/challenge", status: 403, code: "human_check_required"})
		k.check(t, human, call{method: "POST", path: hq + "/enter", body: "{}", header: jsonCT, status: 403, code: "human_check_required"})
		sp.SetMode(humanchecktest.Refuse)
		k.check(t, human, call{method: "POST", path: hq + "/enter", body: `{"human_token":"` + sp.Issue() + `"}`, header: jsonCT, status: 403, code: "human_check_failed"})
		sp.SetMode(humanchecktest.Accept)
		k.check(t, human, call{method: "POST", path: hq + "/enter", body: `{"human_token":"` + sp.Issue() + `"}`, header: jsonCT, status: 200})

		// A scheduled opening whose pre-queue window has not begun.
		now := time.Now().UTC()
		opening := `{"challenge_difficulty":0,"opens_at":"` + now.Add(2*time.Hour).Format(time.RFC3339) + `","prequeue_from":"` + now.Add(time.Hour).Format(time.RFC3339) + `"}`
		k.check(t, full, call{method: "PATCH", path: "/admin/v1/queues/" + full.queue, body: opening, header: withJSON(auth...), status: 200})
		k.check(t, full, call{method: "GET", path: fq, status: 200})
		k.check(t, full, call{method: "POST", path: fq + "/enter", body: "{}", header: jsonCT, status: 403, code: "not_open"})

		// Rate limits: one enter (and one challenge) per client, one status
		// per place.
		limited := k.newEnv(t, rdb, queue.Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour,
			Limits: queue.Limits{EnterPerClient: queue.Limit{Rate: 0.01, Burst: 1}, StatusPerPlace: queue.Limit{Rate: 0.01, Burst: 1}}}, Options{})
		lq := "/api/v1/queues/" + limited.queue
		me := ticket(k.check(t, limited, call{method: "POST", path: lq + "/enter", body: "{}", header: jsonCT, status: 200}))
		r := k.check(t, limited, call{method: "POST", path: lq + "/enter", body: "{}", header: jsonCT, status: 429, code: "rate_limited"})
		if secs, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || secs < 1 {
			t.Fatalf("Retry-After %q", r.header.Get("Retry-After"))
		}
		k.check(t, limited, call{method: "GET", path: lq + "/status", header: bearerHeader(me.PlaceToken), status: 200})
		k.check(t, limited, call{method: "GET", path: lq + "/status", header: bearerHeader(me.PlaceToken), status: 429, code: "rate_limited"})
		// Challenges: the enter limit, in a bucket of their own.
		k.check(t, limited, call{method: "GET", path: lq + "/challenge", status: 200})
		k.check(t, limited, call{method: "GET", path: lq + "/challenge", status: 429, code: "rate_limited"})
	})

	t.Run("handoff", func(t *testing.T) {
		ho := k.newEnv(t, rdb, queue.Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour}, Options{})
		hq := "/api/v1/queues/" + ho.queue
		admitted := ticket(k.check(t, ho, call{method: "POST", path: hq + "/enter", body: "{}", header: jsonCT, status: 200}))
		laptop := ticket(k.check(t, ho, call{method: "POST", path: hq + "/enter", body: "{}", header: jsonCT, status: 200}))
		k.check(t, ho, call{method: "POST", path: hq + "/handoff", header: bearerHeader(admitted.PlaceToken), status: 409, code: "not_waiting"})
		k.check(t, ho, call{method: "POST", path: hq + "/handoff", header: append(bearerHeader(laptop.PlaceToken), "Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"), status: 403, code: "cross_site_request"})
		k.check(t, ho, call{method: "POST", path: "/api/v1/queues/nope/handoff", header: bearerHeader(laptop.PlaceToken), status: 404, code: "queue_not_found"})
		var h publicapi.HandoffResponse
		if err := json.Unmarshal(k.check(t, ho, call{method: "POST", path: hq + "/handoff", header: bearerHeader(laptop.PlaceToken), status: 201}).body, &h); err != nil {
			t.Fatal(err)
		}
		k.check(t, ho, call{method: "GET", path: hq + "/handoff/qr?token=" + h.Token, header: bearerHeader(laptop.PlaceToken), status: 200})
		for range 4 * handoff.QRPerPlace { // the place's burst used up
			if r := ho.do("GET", hq+"/handoff/qr?token="+h.Token, "", bearerHeader(laptop.PlaceToken)...); r.status == 429 {
				break
			}
		}
		k.check(t, ho, call{method: "GET", path: hq + "/handoff/qr?token=" + h.Token, header: bearerHeader(laptop.PlaceToken), status: 429, code: "rate_limited"})
		k.check(t, ho, call{method: "GET", path: hq + "/handoff/qr?token=" + h.Token, header: bearerHeader(admitted.PlaceToken), status: 400, code: "invalid_handoff"})
		k.check(t, ho, call{method: "GET", path: "/api/v1/queues/nope/handoff/qr?token=" + h.Token, header: bearerHeader(laptop.PlaceToken), status: 404, code: "queue_not_found"})
		phone := ticket(k.check(t, ho, call{method: "POST", path: hq + "/enter", body: `{"handoff":"` + h.Code + `"}`, header: jsonCT, status: 200}))
		if phone.UserID != laptop.UserID || phone.Position != laptop.Position {
			t.Fatalf("moved %+v from %+v", phone, laptop)
		}
		k.check(t, ho, call{method: "GET", path: hq + "/status", header: bearerHeader(laptop.PlaceToken), status: 401, code: "place_moved"})
		k.check(t, ho, call{method: "POST", path: hq + "/enter", body: `{"handoff":"` + h.Token + `"}`, header: jsonCT, status: 400, code: "invalid_handoff"})
	})

	t.Run("plain user ids", func(t *testing.T) {
		ins := k.newEnv(t, rdb, slow, Options{InsecureUserIDs: true})
		iq := "/api/v1/queues/" + ins.queue
		k.check(t, ins, call{method: "POST", path: iq + "/enter", body: `{"user_id":"bob"}`, header: jsonCT, status: 200})
		k.check(t, ins, call{method: "POST", path: iq + "/enter", body: `{"user_id":""}`, header: jsonCT, status: 400, code: "invalid_user_id", docRejects: true})
		k.check(t, ins, call{method: "GET", path: iq + "/status?user_id=bob", status: 200})
		k.check(t, ins, call{method: "GET", path: iq + "/status?user_id=" + strings.Repeat("y", 129), status: 400, code: "invalid_user_id", docRejects: true})
		for range 2 { // idempotent
			k.check(t, ins, call{method: "DELETE", path: iq + "/users/bob", status: 204})
		}
		k.check(t, ins, call{method: "DELETE", path: iq + "/users/a%01b", status: 400, code: "invalid_user_id"})
		k.check(t, ins, call{method: "DELETE", path: "/api/v1/queues/nope/users/bob", status: 404, code: "queue_not_found"})
	})

	t.Run("redis down", func(t *testing.T) {
		down := k.newEnv(t, deadRedis(t), slow, Options{AdminToken: adminToken, InsecureUserIDs: true, Codes: testCodes(t)})
		dq := "/api/v1/queues/" + down.queue
		srv := down
		member := place.NewMember()
		placeTok := bearerHeader(srv.places.Issue(down.queue, member, 0))
		pass, err := srv.passes.Issue(down.queue, member, time.Now(), time.Now().Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range append([]call{
			{method: "GET", path: "/readyz"},
			{method: "GET", path: dq},
			{method: "GET", path: dq + "/"},
			{method: "GET", path: dq + "/challenge"},
			{method: "POST", path: dq + "/enter", body: "{}", header: jsonCT},
			{method: "GET", path: dq + "/status", header: placeTok},
			{method: "GET", path: dq + "/draw"},
			{method: "DELETE", path: dq + "/place", header: placeTok},
			{method: "POST", path: dq + "/handoff", header: placeTok},
			{method: "GET", path: dq + "/handoff/qr?token=" + strings.Repeat("A", 43), header: placeTok},
			{method: "DELETE", path: dq + "/users/bob"},
			{method: "POST", path: dq + "/done", header: bearerHeader(pass)},
			{method: "POST", path: dq + "/commands", body: `{"command":"done"}`, header: append(bearerHeader(pass), jsonCT...)},
			{method: "GET", path: "/api/v1/verify?queue=" + e.queue, header: bearerHeader(pass)},
			// A session cookie to end: its session cannot be looked up.
			{method: "POST", path: "/admin/logout", header: []string{"Cookie", "wr_admin=" + strings.Repeat("A", 43)}},
		}, adminCalls(down)...) {
			if strings.HasPrefix(c.path, "/admin/") {
				c.header = append(c.header, auth...)
			}
			c.status, c.code = 503, "unavailable"
			r := k.check(t, down, c)
			if r.header.Get("Retry-After") == "" {
				t.Fatalf("%s %s: 503 without Retry-After", c.method, c.path)
			}
		}
		// WAITROOM_GATE_FAIL=closed: a pass that verifies offline opens;
		// then, the gate knowing Redis away, no pass is 503 (not 401).
		k.check(t, down, call{method: "GET", path: "/gate/verify", header: bearerHeader(pass), status: 204})
		k.check(t, down, call{method: "GET", path: "/gate/verify", status: 503})
		for _, accept := range []string{"text/html", "application/json"} {
			k.check(t, down, call{method: "GET", path: "/gate/refused", header: []string{"Accept", accept, "X-Original-URI", "/order"}, status: 503})
		}
		// The waiting page: the outage page for a browser, JSON for a
		// client that asks for it.
		for _, accept := range []string{"text/html", "application/json"} {
			k.check(t, down, call{method: "GET", path: "/q/" + down.queue, header: []string{"Accept", accept}, status: 503})
		}
		k.check(t, down, call{method: "GET", path: "/healthz", status: 200})
	})

	// Every documented operation was called, and met each status the
	// document gives it.
	for _, op := range k.operations() {
		method, path, _ := strings.Cut(op, " ")
		item := k.doc.Paths.Find(path)
		for code := range item.GetOperation(method).Responses.Map() {
			status, err := strconv.Atoi(code)
			if err != nil {
				t.Errorf("%s: response %q is not a status", op, code)
				continue
			}
			if !k.seen[op][status] {
				t.Errorf("%s: the document lists status %d, which no request here met", op, status)
			}
		}
	}
}

// The served document is the embedded file, cacheable and revalidated by
// its ETag.
func TestOpenAPIDocumentServed(t *testing.T) {
	t.Parallel()
	e := newContract(t).newEnv(t, redistest.Client(t), slow, Options{})
	r := e.do("GET", "/api/openapi.yaml", "")
	if r.status != 200 || !bytes.Equal(r.body, api.OpenAPI) {
		t.Fatalf("GET /api/openapi.yaml: %d, %d bytes", r.status, len(r.body))
	}
	if !regexp.MustCompile(`^public, max-age=[1-9][0-9]*$`).MatchString(r.header.Get("Cache-Control")) {
		t.Fatalf("Cache-Control %q", r.header.Get("Cache-Control"))
	}
	etag := r.header.Get("ETag")
	for _, tc := range []struct {
		ifNoneMatch string
		status      int
	}{
		{etag, 304},
		{"W/" + etag, 304},
		{`"other", ` + etag, 304},
		{"*", 304},
		{`"other"`, 200},
	} {
		if got := e.do("GET", "/api/openapi.yaml", "", "If-None-Match", tc.ifNoneMatch); got.status != tc.status {
			t.Errorf("If-None-Match %s: %d, want %d", tc.ifNoneMatch, got.status, tc.status)
		}
	}
}

// sitePages are the project's pages with an operator's directory holding
// one asset and a template of its own.
func sitePages(t *testing.T) *pages.Pages {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "logo.txt"), []byte("logo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "waiting.html"), []byte(`<!doctype html><html lang="{{.Lang}}"><head>{{.Script}}</head><body><h1>{{.Title}}</h1></body></html>`), 0o644); err != nil {
		t.Fatal(err)
	}
	msgs, err := pages.Messages()
	if err != nil {
		t.Fatal(err)
	}
	p, err := pages.New(pages.Options{Project: pages.ProjectFS(), Messages: msgs, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return p
}
