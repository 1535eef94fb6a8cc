package webhook

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/backoffice/actor"
)

// What a delivery carries: the events of one outbox entry, as the site
// receives them.

// Event is one event as the site receives it.
type Event struct {
	// ID is unique to this event and the same on every delivery of it:
	// "<queue>.<outbox entry id>.<index>", or "<queue>.bulk.<entry
	// id>.<index>" for a user's own leaving (the bulk outbox).
	ID    string `json:"id"`
	Type  string `json:"type"` // admitted, done, left, abandoned, expired, settings_changed, sale_closed, sale_reopened
	Queue string `json:"queue"`
	// Sub is the user (the pass's sub); empty for settings_changed.
	Sub string `json:"sub,omitempty"`
	// Time is when it happened, on the Redis clock (ms).
	Time time.Time `json:"time"`
	// Reason tells a left event apart: "left" (the user) or "removed"
	// (the operator).
	Reason string `json:"reason,omitempty"`
	// Settings are a settings_changed event's new values, as stored.
	Settings map[string]string `json:"settings,omitempty"`
	// Actor is who made a settings_changed event's change, where the
	// change named one.
	Actor *actor.Actor `json:"actor,omitempty"`
}

// Body is what each delivery POSTs.
type Body struct {
	Events []Event `json:"events"`
}

// encode turns outbox entry m of queue q into a delivery's body; its
// events' ids begin with idPrefix (outbox).
func encode(q, idPrefix string, m redis.XMessage) ([]byte, error) {
	str := func(k string) string { s, _ := m.Values[k].(string); return s }
	kind := str("type")
	ms, err := strconv.ParseInt(str("at"), 10, 64)
	if kind == "" || err != nil {
		return nil, errors.New("no type or time")
	}
	at := time.UnixMilli(ms).UTC()
	var out Body
	add := func(sub string) {
		e := Event{ID: idPrefix + m.ID + "." + strconv.Itoa(len(out.Events)), Type: kind, Queue: q, Sub: sub, Time: at}
		if kind == "left" || kind == "removed" {
			e.Type, e.Reason = "left", kind
		}
		out.Events = append(out.Events, e)
	}
	if kind == "settings_changed" || kind == "sale_closed" || kind == "sale_reopened" {
		add("")
		if s := str("settings"); s != "" && s != "{}" {
			if err := json.Unmarshal([]byte(s), &out.Events[0].Settings); err != nil {
				return nil, err
			}
		}
		if a := str("actor"); a != "" {
			out.Events[0].Actor = new(actor.Actor)
			if err := json.Unmarshal([]byte(a), out.Events[0].Actor); err != nil {
				return nil, err
			}
		}
	} else {
		for _, sub := range strings.Split(str("subs"), "\n") {
			if sub != "" {
				add(sub)
			}
		}
	}
	return json.Marshal(out)
}

// entryTime is when a stream entry was written (its id's milliseconds,
// Redis clock).
func entryTime(id string) time.Time {
	ms, _, _ := strings.Cut(id, "-")
	n, _ := strconv.ParseInt(ms, 10, 64)
	return time.UnixMilli(n)
}
