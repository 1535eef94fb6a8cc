package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/waitroom/waitroom/internal/i18n"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/safeurl"
	"github.com/waitroom/waitroom/internal/webhook"
)

// patchSettings changes any of a queue's live settings in one go: every
// field is checked first, and an invalid one (named in the answer) applies
// nothing. It answers the queue as the back office sees it.
func (s *Server) patchSettings(w http.ResponseWriter, r *http.Request) {
	fields, err := decode[map[string]json.RawMessage](w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	u, err := parseUpdate(fields, s.webhookInsecureHTTP, s.probePolicy)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.applySettings(w, r, "settings", fields, u)
}

type refillSizeRequest struct {
	RefillSize *int `json:"refill_size"`
}

// setRefillSize is PATCH with refill_size alone, kept as it was first
// published: its body must hold refill_size, a value out of range is
// invalid_refill_size (queue.ErrInvalidRefill), and the audit log names
// the change refill_size.
func (s *Server) setRefillSize(w http.ResponseWriter, r *http.Request) {
	req, err := decode[refillSizeRequest](w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if req.RefillSize == nil {
		s.fail(w, r, queue.ErrInvalidRefill)
		return
	}
	s.applySettings(w, r, "refill_size", requestedRefill(*req.RefillSize), queue.Update{RefillSize: req.RefillSize})
}

// applySettings makes the change u, which the request's fields stand for,
// to the queue of r's path; audits it as action with the view before and
// after; and answers the view after.
func (s *Server) applySettings(w http.ResponseWriter, r *http.Request, action string, fields map[string]json.RawMessage, u queue.Update) {
	q := chi.URLParam(r, "queue")
	// The view before, for the audit log's old values.
	before, err := s.adminQueueInfo(r.Context(), q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.store.UpdateSettings(r.Context(), q, u); err != nil {
		s.fail(w, r, err)
		return
	}
	logger(r, s.log).Info("settings changed", "queue", q, "fields", slices.Sorted(mapKeys(fields)))
	aq, err := s.adminQueueInfo(r.Context(), q)
	if err != nil {
		s.record(r, q, action, "", settingChanges(fields, before, nil))
		s.fail(w, r, err)
		return
	}
	s.record(r, q, action, "", settingChanges(fields, before, &aq))
	writeJSON(w, http.StatusOK, aq)
}

// parseUpdate reads the settings of a PATCH body; the first field at fault,
// in name order, is named in the error. insecureHTTP lets webhook_url be
// plain http anywhere (WAITROOM_WEBHOOK_INSECURE_HTTP, webhook.CheckURL);
// probes is what origin_probe_url may reach.
func parseUpdate(fields map[string]json.RawMessage, insecureHTTP bool, probes safeurl.Policy) (queue.Update, error) {
	var u queue.Update
	for _, name := range slices.Sorted(mapKeys(fields)) {
		raw := fields[name]
		var err error
		switch name {
		case "refill_size":
			u.RefillSize, err = intField(raw, 1, queue.MaxRefillSize)
		case "max_active":
			u.MaxActive, err = intField(raw, 0, queue.MaxMaxActive)
		case "max_waiting":
			u.MaxWaiting, err = intField(raw, 0, queue.MaxMaxWaiting)
		case "challenge_difficulty":
			u.ChallengeDifficulty, err = intField(raw, 0, queue.MaxChallengeDifficulty)
		case "abandon_after_ms":
			var ms *int
			ms, err = intField(raw, 0, int(queue.MaxAbandonAfter.Milliseconds()))
			if ms != nil {
				d := time.Duration(*ms) * time.Millisecond
				u.AbandonAfter = &d
			}
		case "opens_at":
			u.OpensAt, err = timeField(raw)
		case "prequeue_from":
			u.PrequeueFrom, err = timeField(raw)
		case "webhook_url":
			var v *string
			if json.Unmarshal(raw, &v) != nil {
				err = fmt.Errorf("must be an https URL, or null or \"\" for the default")
				break
			}
			if v == nil {
				v = new(string)
			}
			if *v != "" {
				err = webhook.CheckURL(*v, insecureHTTP)
			}
			u.WebhookURL = v
		case "title":
			u.Title, err = textField(raw)
		case "message":
			u.Message, err = textField(raw)
		case "paused":
			u.Paused, err = boolField(raw)
		case "adapt_enabled":
			u.AdaptEnabled, err = boolField(raw)
		case "origin_target_p95_ms":
			var ms *int
			ms, err = intField(raw, 0, int(queue.MaxOriginTargetP95.Milliseconds()))
			if ms != nil {
				d := time.Duration(*ms) * time.Millisecond
				u.OriginTargetP95 = &d
			}
		case "origin_max_error_rate":
			var f float64
			if json.Unmarshal(raw, &f) != nil || strings.TrimSpace(string(raw)) == "null" || !(f >= 0 && f <= 1) {
				err = fmt.Errorf("must be a number from 0 to 1")
			}
			u.OriginMaxErrorRate = &f
		case "min_refill_size":
			u.MinRefillSize, err = intField(raw, 0, queue.MaxRefillSize)
		case "origin_probe_url":
			if u.OriginProbeURL, err = probeURLField(raw, probes); err != nil {
				return queue.Update{}, err
			}
		default:
			err = fmt.Errorf("is not a setting; settings: refill_size, max_active, max_waiting, challenge_difficulty, abandon_after_ms, paused, opens_at, prequeue_from, webhook_url, title, message, " +
				"adapt_enabled, origin_target_p95_ms, origin_max_error_rate, min_refill_size, origin_probe_url")
		}
		if err != nil {
			return queue.Update{}, &apiError{status: http.StatusBadRequest, code: "invalid_settings", message: name + " " + err.Error(), field: name}
		}
	}
	if len(fields) == 0 {
		return queue.Update{}, &apiError{status: http.StatusBadRequest, code: "invalid_settings", message: "no setting given"}
	}
	return u, nil
}

// probeURLField reads origin_probe_url: an absolute http(s) URL that
// probes may reach (safeurl.Policy.CheckURL), or null or "" for none. A
// URL out of bounds is 400 invalid_probe_url (issue 26, item 13).
func probeURLField(raw json.RawMessage, probes safeurl.Policy) (*string, error) {
	var v *string
	if json.Unmarshal(raw, &v) != nil {
		return nil, &apiError{status: http.StatusBadRequest, code: "invalid_settings", field: "origin_probe_url",
			message: "origin_probe_url must be an absolute http(s) URL, or null or \"\" for none"}
	}
	if v == nil {
		v = new(string)
	}
	if *v == "" {
		return v, nil
	}
	if queue.CheckProbeURL(*v) != nil || probes.CheckURL(*v) != nil {
		return nil, &apiError{status: http.StatusBadRequest, code: "invalid_probe_url", field: "origin_probe_url",
			message: fmt.Sprintf("origin_probe_url must be an absolute http(s) URL without credentials, at most %d bytes, to a host that is not link-local, "+
				"nor loopback or private unless WAITROOM_ORIGIN_PROBE_ALLOW_PRIVATE=true, with an IP address in dotted decimal; or null or \"\" for none", queue.MaxProbeURLBytes)}
	}
	return v, nil
}

// textField reads a queue's title or message: an object of texts by
// language (one of i18n.Langs), or null or {} for none. The store checks
// each text (queue.Text).
func textField(raw json.RawMessage) (*map[string]string, error) {
	var m map[string]string
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("must be an object of texts by language (%s), or null", strings.Join(i18n.Langs, ", "))
	}
	for lang := range m {
		if !i18n.Supported(lang) {
			return nil, fmt.Errorf("has %q, which is not one of the pages' languages (%s)", lang, strings.Join(i18n.Langs, ", "))
		}
	}
	if m == nil {
		m = map[string]string{}
	}
	return &m, nil
}

// boolField reads true or false.
func boolField(raw json.RawMessage) (*bool, error) {
	var b bool
	if json.Unmarshal(raw, &b) != nil || strings.TrimSpace(string(raw)) == "null" {
		return nil, fmt.Errorf("must be true or false")
	}
	return &b, nil
}

// timeField reads an RFC 3339 time, or null (or "") for none.
func timeField(raw json.RawMessage) (*time.Time, error) {
	var v *string
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("must be an RFC 3339 time or null")
	}
	var t time.Time
	if v != nil && *v != "" {
		var err error
		if t, err = time.Parse(time.RFC3339, *v); err != nil {
			return nil, fmt.Errorf("must be an RFC 3339 time (2026-12-24T09:00:00+09:00) or null")
		}
	}
	return &t, nil
}

// intField reads a whole number in [lo, hi].
func intField(raw json.RawMessage, lo, hi int) (*int, error) {
	var n int
	if err := json.Unmarshal(raw, &n); err != nil || strings.TrimSpace(string(raw)) == "null" || n < lo || n > hi {
		return nil, fmt.Errorf("must be an integer from %d to %d", lo, hi)
	}
	return &n, nil
}

func mapKeys[V any](m map[string]V) func(yield func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
