package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"

	"github.com/waitroom/waitroom/internal/testkit/wait"
)

// Real traffic through the whole service (run, real Redis): every metric
// that the shipped alert rules and dashboard name is served on the metrics
// listener, with the counts the traffic implies; the public listener
// serves no metrics.
func TestMetricsNamedByAlertsAndDashboardExist(t *testing.T) {
	const users = 10
	queue := fmt.Sprintf("metrics%d", time.Now().UnixNano())
	metricsAddr := freeAddr(t)
	r := startReplica(t, map[string]string{
		"WAITROOM_QUEUES":          queue,
		"WAITROOM_REFILL_SIZE":     "3",
		"WAITROOM_REFILL_INTERVAL": "200ms",
		// users enters from this address pass; the next is refused.
		"WAITROOM_LIMIT_ENTER_PER_CLIENT": fmt.Sprintf("0.001,%d", users),
		"WAITROOM_METRICS_ADDR":           metricsAddr,
	})
	api := "/api/v1/queues/" + queue
	var tokens []string
	for range users {
		var tk ticket
		if code := r.call(t, "POST", api+"/enter", "", &tk); code != 200 || tk.PlaceToken == "" {
			t.Fatalf("enter: %d %+v", code, tk)
		}
		tokens = append(tokens, tk.PlaceToken)
	}
	if code := r.call(t, "POST", api+"/enter", "", nil); code != 429 {
		t.Fatalf("enter over the limit: %d, want 429", code)
	}
	for _, tk := range tokens {
		if code := r.call(t, "GET", api+"/status", tk, nil); code != 200 {
			t.Fatalf("status: %d", code)
		}
	}
	if code := r.call(t, "GET", "/no/such/path", "", nil); code != 404 {
		t.Fatalf("unknown path: %d", code)
	}
	if code := r.call(t, "GET", "/metrics", "", nil); code != 404 {
		t.Fatalf("/metrics on the public listener: %d, want 404", code)
	}

	// The ticks admit the whole line within a few intervals. The gauges
	// are read from Redis, and a tick's counters move only once its call
	// has returned, so a scrape can see the line empty before the last
	// tick is counted: wait until the counters have caught up too.
	var fams map[string]*dto.MetricFamily
	wait.For(t, 20*time.Second, "the line to empty and every admission and tick to be counted", func() (bool, string) {
		fams = scrape(t, "http://"+metricsAddr+"/metrics")
		waiting := value(fams, "waitroom_queue_waiting", "queue", queue)
		applied := value(fams, "waitroom_queue_ticks_total", "queue", queue, "result", "applied")
		admitted := value(fams, "waitroom_queue_admitted_total", "queue", queue, "via", "direct") +
			value(fams, "waitroom_queue_admitted_total", "queue", queue, "via", "tick")
		durations := value(fams, "waitroom_queue_tick_duration_seconds", "queue", queue)
		lateness := value(fams, "waitroom_queue_tick_lateness_seconds", "queue", queue)
		return waiting == 0 && applied >= 2 && admitted == users && durations == applied && lateness == applied,
			fmt.Sprintf("waiting %v, admitted %v of %d, %v ticks applied (want 2 or more), %v tick durations and %v latenesses observed",
				waiting, admitted, users, applied, durations, lateness)
	})

	enter, status := "/api/v1/queues/{queue}/enter", "/api/v1/queues/{queue}/status"
	applied := value(fams, "waitroom_queue_ticks_total", "queue", queue, "result", "applied")
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"waitroom_http_requests_total", []string{"route", enter, "method", "POST", "code", "200"}, users},
		{"waitroom_http_requests_total", []string{"route", enter, "method", "POST", "code", "429"}, 1},
		{"waitroom_http_requests_total", []string{"route", status, "method", "GET", "code", "200"}, users},
		// /no/such/path, and /metrics on the public listener
		{"waitroom_http_requests_total", []string{"route", "unmatched", "method", "GET", "code", "404"}, 2},
		{"waitroom_http_request_duration_seconds", []string{"route", enter, "class", "2xx"}, users},
		{"waitroom_http_request_duration_seconds", []string{"route", enter, "class", "4xx"}, 1},
		{"waitroom_queue_rejected_total", []string{"queue", queue, "op", "enter", "reason", "rate_limited"}, 1},
		{"waitroom_queue_rejected_total", []string{"queue", queue, "op", "enter", "reason", "queue_full"}, 0},
		{"waitroom_queue_active", []string{"queue", queue}, users},
		{"waitroom_queue_refill_size", []string{"queue", queue}, 3},
		{"waitroom_queue_refill_interval_seconds", []string{"queue", queue}, 0.2},
		{"waitroom_queue_paused", []string{"queue", queue}, 0},
		{"waitroom_queue_abandoned_total", []string{"queue", queue}, 0},
		{"waitroom_queue_tick_lateness_seconds", []string{"queue", queue}, applied},
		{"waitroom_queue_tick_duration_seconds", []string{"queue", queue}, applied},
		{"waitroom_redis_errors_total", []string{"command", "fcall"}, 0},
		{"waitroom_queue_info_errors_total", []string{"queue", queue}, 0},
		{"waitroom_redis_wait_short_total", nil, 0},
	} {
		if got := value(fams, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// Every place was admitted once: directly on the bucket's tokens, or
	// moved by a tick.
	direct := value(fams, "waitroom_queue_admitted_total", "queue", queue, "via", "direct")
	byTick := value(fams, "waitroom_queue_admitted_total", "queue", queue, "via", "tick")
	if direct < 3 || direct+byTick != users {
		t.Errorf("admitted directly %v and by tick %v, want at least 3 directly and %d in all", direct, byTick, users)
	}
	// Each enter that passed the rate limit went to Redis in some batch.
	if got := sum(fams, "waitroom_queue_batch_size", "queue", queue, "op", "enter"); got != users {
		t.Errorf("enter batches carried %v calls, want %d", got, users)
	}
	if got := value(fams, "waitroom_redis_command_duration_seconds", "command", "fcall"); got == 0 {
		t.Error("no fcall timed")
	}

	names := servedNames(fams)
	exprs := alertExprs(t, "../../deploy/prometheus/alerts.yml")
	if len(exprs) < 4 {
		t.Fatalf("%d alert rules, want at least 4", len(exprs))
	}
	exprs = append(exprs, dashboardExprs(t, "../../deploy/grafana/waitroom.json")...)
	checked := map[string]bool{}
	for _, e := range exprs {
		for _, n := range promqlNames(e) {
			checked[n] = true
			if !names[n] {
				t.Errorf("%s, named by %q, is not served", n, e)
			}
		}
	}
	if len(checked) < 20 {
		t.Errorf("only %d metric names found in the rules and dashboard: %v", len(checked), checked)
	}
}

// scrape fetches and parses url's metrics.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d", url, resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// value is the value of the series of family name with the label pairs
// given (a histogram's: its count), 0 when there is none.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	for _, m := range series(fams, name, labels...) {
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return 0
}

// sum is a histogram's sum of observations.
func sum(fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	for _, m := range series(fams, name, labels...) {
		return m.Histogram.GetSampleSum()
	}
	return 0
}

func series(fams map[string]*dto.MetricFamily, name string, labels ...string) []*dto.Metric {
	f := fams[name]
	if f == nil {
		return nil
	}
	var out []*dto.Metric
	for _, m := range f.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		match := true
		for i := 0; i+1 < len(labels); i += 2 {
			match = match && have[labels[i]] == labels[i+1]
		}
		if match {
			out = append(out, m)
		}
	}
	return out
}

// servedNames are the sample names a PromQL expression can select: each
// family's name, and a histogram's _bucket, _sum and _count series.
func servedNames(fams map[string]*dto.MetricFamily) map[string]bool {
	names := map[string]bool{}
	for name, f := range fams {
		if len(f.Metric) == 0 {
			continue
		}
		names[name] = true
		if f.GetType() == dto.MetricType_HISTOGRAM {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				names[name+s] = true
			}
		}
	}
	return names
}

func alertExprs(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert, Expr string
			}
		}
	}
	if err := yaml.Unmarshal(b, &rules); err != nil {
		t.Fatal(err)
	}
	var exprs []string
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" || r.Expr == "" {
				t.Fatalf("%s: a rule without alert or expr: %+v", path, r)
			}
			exprs = append(exprs, r.Expr)
		}
	}
	return exprs
}

// dashboardExprs are the panels' queries and the variables' queries.
func dashboardExprs(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Targets []struct{ Expr string }
		}
		Templating struct {
			List []struct {
				Type  string
				Query json.RawMessage
			}
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	var exprs []string
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct{ Query string }
		if err := json.Unmarshal(v.Query, &q); err != nil {
			t.Fatal(err)
		}
		// label_values(metric, label): the metric is a selector.
		if m, ok := strings.CutPrefix(q.Query, "label_values("); ok {
			m, _, _ = strings.Cut(m, ",")
			q.Query = m
		}
		exprs = append(exprs, q.Query)
	}
	return exprs
}

// promqlNames returns the metric names a PromQL expression (or a Grafana
// label_values(metric, label) query) selects. It knows just enough PromQL
// for that: label matchers {...}, ranges [...], strings, numbers, Grafana
// variables ($x, ${x}) and the label lists after by, without, on, ignoring,
// group_left and group_right are skipped; an identifier before "(" is a
// function, and aggregation operators are never names.
func promqlNames(expr string) []string {
	keywords := []string{"by", "without", "on", "ignoring", "group_left", "group_right",
		"and", "or", "unless", "bool", "offset", "inf", "nan",
		// aggregations, which may come before their by (...)
		"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
		"bottomk", "topk", "quantile", "limitk", "limit_ratio"}
	grouping := []string{"by", "without", "on", "ignoring", "group_left", "group_right"}
	isIdent := func(c byte, first bool) bool {
		return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || !first && c >= '0' && c <= '9'
	}
	skipTo := func(i int, close byte) int { // index after the closing byte
		for i < len(expr) && expr[i] != close {
			if expr[i] == '"' || expr[i] == '\'' || expr[i] == '`' {
				q := expr[i]
				for i++; i < len(expr) && expr[i] != q; i++ {
					if expr[i] == '\\' {
						i++
					}
				}
			}
			i++
		}
		return i + 1
	}
	var names []string
	skipList := false // the next (...) is a grouping label list
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '{':
			i = skipTo(i+1, '}')
		case c == '[':
			i = skipTo(i+1, ']')
		case c == '"' || c == '\'' || c == '`':
			i = skipTo(i+1, c)
		case c == '(' && skipList:
			i = skipTo(i+1, ')')
			skipList = false
		case c == '$':
			i++
			if i < len(expr) && expr[i] == '{' {
				i = skipTo(i+1, '}')
			}
			for i < len(expr) && isIdent(expr[i], false) {
				i++
			}
		case c >= '0' && c <= '9' || c == '.':
			for i < len(expr) && (isIdent(expr[i], false) || expr[i] == '.') {
				i++
			}
		case isIdent(c, true):
			j := i
			for j < len(expr) && isIdent(expr[j], false) {
				j++
			}
			word := expr[i:j]
			k := j
			for k < len(expr) && expr[k] == ' ' {
				k++
			}
			skipList = slices.Contains(grouping, strings.ToLower(word))
			switch {
			case slices.Contains(keywords, strings.ToLower(word)):
			case k < len(expr) && expr[k] == '(': // a function
			default:
				names = append(names, word)
			}
			i = j
		default:
			i++
		}
	}
	return names
}

func TestPromQLNames(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`up`, []string{"up"}},
		{`sum by (queue, via) (rate(a_total{queue=~"$queue", x="by(b)"}[$__rate_interval]))`, []string{"a_total"}},
		{`histogram_quantile(0.99, sum by (le) (rate(h_bucket[5m]))) > 1e-3`, []string{"h_bucket"}},
		{"max by (queue) (a) > 3 * max by (queue) (b)\n  and on (queue) c == 0", []string{"a", "b", "c"}},
		{`x / ignoring (code) group_left y offset 5m`, []string{"x", "y"}},
	} {
		got := promqlNames(tc.expr)
		if !slices.Equal(got, tc.want) {
			t.Errorf("promqlNames(%q) = %v, want %v", tc.expr, got, tc.want)
		}
	}
}
