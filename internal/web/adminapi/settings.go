package adminapi

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/waitroom/waitroom/internal/backoffice/adminauth"
	"github.com/waitroom/waitroom/internal/backoffice/changes"
	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/hygiene/safeurl"
	"github.com/waitroom/waitroom/internal/ops/webhook"
	"github.com/waitroom/waitroom/internal/web/httpkit"
	"github.com/waitroom/waitroom/internal/web/i18n"
)

// PatchSettings changes any of a queue's live settings in one go: every
// field is checked first, and an invalid one (named in the answer) applies
// nothing. It answers the queue as the back office sees it.
func (s *API) PatchSettings(w http.ResponseWriter, r *http.Request) {
	fields, err := httpkit.Decode[map[string]json.RawMessage](w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	// The role first: an operator learns nothing of an admin's fields.
	err = allowed(r, settingsRole(fields))
	var u queue.Update
	if err == nil {
		u, err = parseUpdate(fields, s.webhookChecks, s.probePolicy)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.applySettings(w, r, "settings", fields, u)
}

// settingsRole is the role that may change all of fields: admin when one
// of them is an admin's setting (queue.RoleAdmin: it reaches another
// host), else operator.
func settingsRole(fields map[string]json.RawMessage) adminauth.Role {
	for name := range fields {
		if st, _ := queue.Lookup(name); st.Role == queue.RoleAdmin {
			return adminauth.Admin
		}
	}
	return adminauth.Operator
}

type refillSizeRequest struct {
	RefillSize *int `json:"refill_size"`
}

// errInvalidRefillSize is PUT .../refill-size's own answer to a refill
// size missing or out of range, as it was first published.
var errInvalidRefillSize = &httpkit.Error{Status: http.StatusBadRequest, Code: "invalid_refill_size",
	Message: fmt.Sprintf("refill_size must be an integer from 1 to %d", queue.MaxRefillSize)}

// SetRefillSize is PATCH with refill_size alone, kept as it was first
// published: its body must hold refill_size, a value out of range is
// invalid_refill_size, and the audit log names the change refill_size.
func (s *API) SetRefillSize(w http.ResponseWriter, r *http.Request) {
	req, err := httpkit.Decode[refillSizeRequest](w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	st, _ := queue.Lookup("refill_size")
	if req.RefillSize == nil || st.Check(*req.RefillSize) != nil {
		s.fail(w, r, errInvalidRefillSize)
		return
	}
	s.applySettings(w, r, "refill_size", requestedRefill(*req.RefillSize), queue.Update{RefillSize: req.RefillSize})
}

// applySettings makes the change u, which the request's fields stand for,
// to the queue of r's path (changes.Settings.Apply: audited as action
// with the view before and after), and answers the view after.
func (s *API) applySettings(w http.ResponseWriter, r *http.Request, action string, fields map[string]json.RawMessage, u queue.Update) {
	change := &changes.Settings[QueueView]{Store: s.inspector, Audit: s.admin.audit, View: s.adminQueueInfo}
	aq, err := change.Apply(r.Context(), changes.Change{Queue: chi.URLParam(r, "queue"), Action: action,
		Requested: fields, Update: u, Who: s.auditWho(r), Log: s.logger(r)})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, aq)
}

// parseUpdate reads the settings of a PATCH body (queue.Catalog's
// operator settings); the first field at fault, in name order, is named
// in the error. hooks is what webhook_url may be; probes is what
// origin_probe_url may reach.
func parseUpdate(fields map[string]json.RawMessage, hooks webhookChecks, probes safeurl.Policy) (queue.Update, error) {
	if len(fields) == 0 {
		return queue.Update{}, &httpkit.Error{Status: http.StatusBadRequest, Code: "invalid_settings", Message: "no setting given"}
	}
	var u queue.Update
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		st, ok := queue.Lookup(name)
		if !ok || !st.Role.Live() {
			return queue.Update{}, queue.NotASetting(name)
		}
		v, err := decodeSetting(st, fields[name], hooks, probes)
		if err != nil {
			return queue.Update{}, err
		}
		u.Set(name, v)
	}
	return u, nil
}

// decodeSetting reads one setting (queue.Setting.Decode) and checks what
// only the API knows: a webhook URL's form, what a probe may reach, the
// pages' languages.
func decodeSetting(st queue.Setting, raw json.RawMessage, hooks webhookChecks, probes safeurl.Policy) (any, error) {
	switch st.Name {
	case "webhook_url":
		return webhookURLField(raw, hooks)
	case "origin_probe_url":
		return probeURLField(raw, probes)
	}
	if st.Kind == queue.KindLine || st.Kind == queue.KindText {
		return textField(st.Name, raw)
	}
	return st.Decode(raw)
}

// webhookChecks is what a webhook_url must meet on this service.
type webhookChecks struct {
	// insecureHTTP lets it be plain http anywhere
	// (WAITROOM_WEBHOOK_INSECURE_HTTP, webhook.CheckURL).
	insecureHTTP bool
	// noSecret: WAITROOM_WEBHOOK_SECRET is not set, so nothing would be
	// delivered to it (and nothing logged): a URL is refused rather than
	// stored to wait in silence.
	noSecret bool
}

// errWebhooksDisabled: a webhook_url set while no webhook secret is.
var errWebhooksDisabled = &httpkit.Error{Status: http.StatusBadRequest, Code: "webhooks_disabled", Field: "webhook_url",
	Message: "webhooks are off on this service: set WAITROOM_WEBHOOK_SECRET (32 bytes or more) on every replica, then set webhook_url"}

// webhookURLField reads webhook_url: an https URL (webhook.CheckURL), or
// null or "" for the default.
func webhookURLField(raw json.RawMessage, hooks webhookChecks) (string, error) {
	var v *string
	if json.Unmarshal(raw, &v) != nil {
		return "", invalidSetting("webhook_url", "must be an https URL, or null or \"\" for the default")
	}
	if v == nil || *v == "" {
		return "", nil
	}
	if err := webhook.CheckURL(*v, hooks.insecureHTTP); err != nil {
		return "", invalidSetting("webhook_url", err.Error())
	}
	if hooks.noSecret {
		return "", errWebhooksDisabled
	}
	return *v, nil
}

// invalidSetting is a setting refused by the API's own checks.
func invalidSetting(name, message string) error {
	return &httpkit.Error{Status: http.StatusBadRequest, Code: "invalid_settings", Message: name + " " + message, Field: name}
}

// probeURLField reads origin_probe_url: an absolute http(s) URL that
// probes may reach (safeurl.Policy.CheckURL), or null or "" for none. A
// URL out of bounds is 400 invalid_probe_url.
func probeURLField(raw json.RawMessage, probes safeurl.Policy) (string, error) {
	var v *string
	if json.Unmarshal(raw, &v) != nil {
		return "", &httpkit.Error{Status: http.StatusBadRequest, Code: "invalid_settings", Field: "origin_probe_url",
			Message: "origin_probe_url must be an absolute http(s) URL, or null or \"\" for none"}
	}
	if v == nil || *v == "" {
		return "", nil
	}
	if queue.CheckProbeURL(*v) != nil || probes.CheckURL(*v) != nil {
		return "", &httpkit.Error{Status: http.StatusBadRequest, Code: "invalid_probe_url", Field: "origin_probe_url",
			Message: fmt.Sprintf("origin_probe_url must be an absolute http(s) URL without credentials, at most %d bytes, to a host that is not link-local, "+
				"nor loopback or private unless WAITROOM_ORIGIN_PROBE_ALLOW_PRIVATE=true, with an IP address in dotted decimal; or null or \"\" for none", queue.MaxProbeURLBytes)}
	}
	return *v, nil
}

// textField reads a queue's title or message (name): an object of texts
// by language (one of i18n.Langs), or null or {} for none. The store
// checks each text (queue.Text).
func textField(name string, raw json.RawMessage) (map[string]string, error) {
	var m map[string]string
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, invalidSetting(name, fmt.Sprintf("must be an object of texts by language (%s), or null", strings.Join(i18n.Langs, ", ")))
	}
	for lang := range m {
		if !i18n.Supported(lang) {
			return nil, invalidSetting(name, fmt.Sprintf("has %q, which is not one of the pages' languages (%s)", lang, strings.Join(i18n.Langs, ", ")))
		}
	}
	if m == nil {
		m = map[string]string{}
	}
	return m, nil
}
