package webhook

import (
	"encoding/json"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/backoffice/actor"
)

// TestSettingsChangedNamesItsActor: the event carries who made the
// change, as the outbox entry names them; an entry written before actors
// were has none.
func TestSettingsChangedNamesItsActor(t *testing.T) {
	for _, c := range []struct {
		name   string
		values map[string]any
		want   *actor.Actor
	}{
		{"named", map[string]any{"type": "settings_changed", "at": "1700000000000", "settings": `{"refill_size":"3"}`,
			"actor": `{"kind":"token","name":"deploy-bot"}`}, &actor.Actor{Kind: actor.KindToken, Name: "deploy-bot"}},
		{"before actors", map[string]any{"type": "settings_changed", "at": "1700000000000", "settings": `{"paused":"1"}`}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := encode("sale", "sale.", redis.XMessage{ID: "1700000000000-0", Values: c.values})
			if err != nil {
				t.Fatal(err)
			}
			var body Body
			if err := json.Unmarshal(b, &body); err != nil || len(body.Events) != 1 {
				t.Fatalf("%s: %v", b, err)
			}
			got := body.Events[0].Actor
			if (got == nil) != (c.want == nil) || got != nil && *got != *c.want {
				t.Fatalf("actor %v, want %v (%s)", got, c.want, b)
			}
		})
	}
	if _, err := encode("sale", "sale.", redis.XMessage{ID: "1-0", Values: map[string]any{"type": "settings_changed", "at": "1", "actor": "{"}}); err == nil {
		t.Fatal("a broken actor encoded")
	}
}
