package metrics

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
)

// The naming scheme (prometheus.io's naming practices), one rule a line:
//
//	waitroom_<subsystem>_<name>[_<unit>]  lower case words joined by "_"
//	subsystem: one of subsystems (who counts or what is measured)
//	counter: ends in _total, nothing else does
//	histogram: ends in _seconds, _size for a count of things, or
//	  _difficulty for a proof of work's (leading zero bits: promlint
//	  takes a "bits" word for a unit of data)
//	a time (duration, age, lag, interval, lateness, time, error): in _seconds
//	queue: every family labelled by queue is under waitroom_queue_, or it
//	  is a component's own count that it keeps per queue (queueLabelled)
var (
	subsystems    = []string{"queue", "http", "redis", "webhook", "gate", "proxy", "pow", "networks"}
	queueLabelled = []string{"gate", "webhook"}
	nameForm      = regexp.MustCompile(`^waitroom_([a-z]+)_[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
	timeWords     = regexp.MustCompile(`_(duration|age|lag|interval|lateness|time|error)(_|$)`)
)

// families is every family waitroom exports, with its type: the walk
// below must meet each, so a family that goes missing (or that the walk
// stops reaching) fails as a new one outside the table does.
var families = map[string]dto.MetricType{
	"waitroom_queue_waiting":                   dto.MetricType_GAUGE,
	"waitroom_queue_active":                    dto.MetricType_GAUGE,
	"waitroom_queue_tokens":                    dto.MetricType_GAUGE,
	"waitroom_queue_refill_size":               dto.MetricType_GAUGE,
	"waitroom_queue_refill_effective":          dto.MetricType_GAUGE,
	"waitroom_queue_refill_interval_seconds":   dto.MetricType_GAUGE,
	"waitroom_queue_paused":                    dto.MetricType_GAUGE,
	"waitroom_queue_closed":                    dto.MetricType_GAUGE,
	"waitroom_queue_last_tick_age_seconds":     dto.MetricType_GAUGE,
	"waitroom_queue_info_errors_total":         dto.MetricType_COUNTER,
	"waitroom_queue_admitted_total":            dto.MetricType_COUNTER,
	"waitroom_queue_abandoned_total":           dto.MetricType_COUNTER,
	"waitroom_queue_rejected_total":            dto.MetricType_COUNTER,
	"waitroom_queue_ticks_total":               dto.MetricType_COUNTER,
	"waitroom_queue_tick_duration_seconds":     dto.MetricType_HISTOGRAM,
	"waitroom_queue_tick_lateness_seconds":     dto.MetricType_HISTOGRAM,
	"waitroom_queue_batch_size":                dto.MetricType_HISTOGRAM,
	"waitroom_queue_time_in_line_seconds":      dto.MetricType_HISTOGRAM,
	"waitroom_queue_eta_error_seconds":         dto.MetricType_HISTOGRAM,
	"waitroom_queue_time_inside_seconds":       dto.MetricType_HISTOGRAM,
	"waitroom_queue_lane_waiting":              dto.MetricType_GAUGE,
	"waitroom_queue_lane_admitted_total":       dto.MetricType_COUNTER,
	"waitroom_queue_lane_time_in_line_seconds": dto.MetricType_HISTOGRAM,
	"waitroom_http_requests_total":             dto.MetricType_COUNTER,
	"waitroom_http_request_duration_seconds":   dto.MetricType_HISTOGRAM,
	"waitroom_redis_command_duration_seconds":  dto.MetricType_HISTOGRAM,
	"waitroom_redis_errors_total":              dto.MetricType_COUNTER,
	"waitroom_redis_timeouts_total":            dto.MetricType_COUNTER,
	"waitroom_redis_wait_short_total":          dto.MetricType_COUNTER,
	"waitroom_webhook_deliveries_total":        dto.MetricType_COUNTER,
	"waitroom_webhook_backlog":                 dto.MetricType_GAUGE,
	"waitroom_webhook_lag_seconds":             dto.MetricType_GAUGE,
	"waitroom_webhook_events_dropped_total":    dto.MetricType_COUNTER,
	"waitroom_gate_fail_open_total":            dto.MetricType_COUNTER,
	"waitroom_proxy_cut_total":                 dto.MetricType_COUNTER,
	"waitroom_gate_commands_total":             dto.MetricType_COUNTER,
	"waitroom_queue_pow_paid_difficulty":       dto.MetricType_HISTOGRAM,
	"waitroom_queue_pow_asked_difficulty":      dto.MetricType_HISTOGRAM,
	"waitroom_queue_human_checks_total":        dto.MetricType_COUNTER,
	"waitroom_pow_max_difficulty":              dto.MetricType_GAUGE,
	"waitroom_networks_prefixes":               dto.MetricType_GAUGE,
}

// Every family on the registry follows the scheme, passes Prometheus's
// own linter, and is one of the table's; only the Go runtime's and the
// process's (go_*, process_*) are not waitroom's.
func TestMetricNamesFollowTheScheme(t *testing.T) {
	m := everyFamily(t)
	got, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range got {
		name := f.GetName()
		if strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_") {
			continue
		}
		seen[name] = true
		for _, problem := range schemeProblems(f) {
			t.Errorf("%s: %s", name, problem)
		}
		if want, ok := families[name]; !ok {
			t.Errorf("%s: not in the table of families (add it, and to the docs' metrics table)", name)
		} else if f.GetType() != want {
			t.Errorf("%s: a %v, the table says %v", name, f.GetType(), want)
		}
	}
	for name := range families {
		if !seen[name] {
			t.Errorf("%s: in the table, not on the registry", name)
		}
	}
	problems, err := testutil.GatherAndLint(m.reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "waitroom_") {
			t.Errorf("promlint: %s: %s", p.Metric, p.Text)
		}
	}
}

// schemeProblems says how family f breaks the scheme (none: it follows).
func schemeProblems(f *dto.MetricFamily) []string {
	name := f.GetName()
	sub := nameForm.FindStringSubmatch(name)
	if sub == nil {
		return []string{"not waitroom_<subsystem>_<name> in lower case words"}
	}
	var problems []string
	if !slices.Contains(subsystems, sub[1]) {
		problems = append(problems, "subsystem "+sub[1]+" is none of "+strings.Join(subsystems, ", "))
	}
	counter := f.GetType() == dto.MetricType_COUNTER
	if counter != strings.HasSuffix(name, "_total") {
		problems = append(problems, "counters, and only counters, end in _total")
	}
	if f.GetType() == dto.MetricType_HISTOGRAM && !strings.HasSuffix(name, "_seconds") && !strings.HasSuffix(name, "_size") && !strings.HasSuffix(name, "_difficulty") {
		problems = append(problems, "a histogram is of _seconds, of a _size or of a _difficulty")
	}
	if timeWords.MatchString(name) && !strings.HasSuffix(strings.TrimSuffix(name, "_total"), "_seconds") {
		problems = append(problems, "a time is in _seconds")
	}
	if sub[1] != "queue" && !slices.Contains(queueLabelled, sub[1]) && labelled(f, "queue") {
		problems = append(problems, "labelled by queue outside waitroom_queue_")
	}
	if sub[1] == "queue" && !labelled(f, "queue") {
		problems = append(problems, "under waitroom_queue_ without a queue label")
	}
	return problems
}

func labelled(f *dto.MetricFamily, label string) bool {
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == label {
				return true
			}
		}
	}
	return false
}

// everyFamily is a Metrics on a real queue with a series in each family:
// the HTTP children are made on a request's first use, the last tick age
// after a tick, the webhook gauges on the deliverer's first report.
func everyFamily(t *testing.T) *Metrics {
	t.Helper()
	q := uniq("names")
	store := newStore(t, redistest.Client(t), q)
	m := New(store)
	if _, err := store.Tick(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	m.WebhookBacklog(q, 0, 0)
	m.Tick(q, queue.TickResult{Applied: true, Moved: 1, Lanes: []queue.LaneTick{{Lane: "priority", Moved: 1}},
		Samples: []queue.Sample{{Kind: queue.TimeInLine, Value: time.Second, Count: 1, Lane: "priority"}}}, 0, nil)
	r := chi.NewRouter()
	r.Use(m.Middleware)
	r.Get("/", func(w http.ResponseWriter, r *http.Request) {})
	r.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	return m
}

// The rules catch the names this scheme replaced, and the usual slips.
func TestSchemeProblems(t *testing.T) {
	family := func(name string, typ dto.MetricType, labels ...string) *dto.MetricFamily {
		m := &dto.Metric{}
		for _, l := range labels {
			m.Label = append(m.Label, &dto.LabelPair{Name: &l, Value: &l})
		}
		return &dto.MetricFamily{Name: &name, Type: &typ, Metric: []*dto.Metric{m}}
	}
	for _, c := range []struct {
		f    *dto.MetricFamily
		want string // a problem's start; "" for none
	}{
		{family("waitroom_queue_abandoned_total", dto.MetricType_COUNTER, "queue"), ""},
		{family("waitroom_gate_fail_open_total", dto.MetricType_COUNTER, "queue"), ""},
		{family("waitroom_abandoned_total", dto.MetricType_COUNTER, "queue"), "subsystem abandoned"},
		{family("waitroom_refill_effective", dto.MetricType_GAUGE, "queue"), "subsystem refill"},
		{family("waitroom_eta_error_seconds", dto.MetricType_HISTOGRAM, "queue"), "subsystem eta"},
		{family("waitroom_http_requests", dto.MetricType_COUNTER), "counters, and only"},
		{family("waitroom_webhook_backlog_total", dto.MetricType_GAUGE, "queue"), "counters, and only"},
		{family("waitroom_queue_tick_duration_ms", dto.MetricType_HISTOGRAM, "queue"), "a histogram"},
		{family("waitroom_queue_pow_paid_difficulty", dto.MetricType_HISTOGRAM, "queue"), ""},
		{family("waitroom_queue_pow_bits_paid", dto.MetricType_HISTOGRAM, "queue"), "a histogram"},
		{family("waitroom_pow_max_difficulty", dto.MetricType_GAUGE), ""},
		{family("waitroom_webhook_lag_ms", dto.MetricType_GAUGE, "queue"), "a time is in _seconds"},
		{family("waitroom_redis_queue_errors_total", dto.MetricType_COUNTER, "queue"), "labelled by queue"},
		{family("waitroom_queue_info_errors_total", dto.MetricType_COUNTER), "under waitroom_queue_"},
		{family("waitroom_Queue_waiting", dto.MetricType_GAUGE, "queue"), "not waitroom_"},
		{family("wr_queue_waiting", dto.MetricType_GAUGE, "queue"), "not waitroom_"},
	} {
		got := schemeProblems(c.f)
		switch {
		case c.want == "" && len(got) > 0:
			t.Errorf("%s: %q, want none", c.f.GetName(), got)
		case c.want != "" && !slices.ContainsFunc(got, func(p string) bool { return strings.HasPrefix(p, c.want) }):
			t.Errorf("%s: %q, want one starting %q", c.f.GetName(), got, c.want)
		}
	}
}
