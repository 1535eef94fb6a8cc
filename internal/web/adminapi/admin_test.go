package adminapi

import (
	"encoding/json"
	"testing"

	"github.com/waitroom/waitroom/internal/backoffice/audit"
)

// The settings are audited without being named: a field the admin view
// does not show (a setting added later) is recorded with the value asked.
func TestSettingChangesGeneric(t *testing.T) {
	t.Parallel()
	before := QueueView{Settings: map[string]any{"refill_size": 5, "max_active": 10}}
	after := QueueView{Settings: map[string]any{"refill_size": 5, "max_active": 20}}
	req := map[string]json.RawMessage{"max_active": json.RawMessage(`20`), "refill_size": json.RawMessage(`5`), "future_setting": json.RawMessage(`12`)}
	want := `[{"field":"future_setting","old":null,"new":12},{"field":"max_active","old":10,"new":20},{"field":"refill_size","old":5,"new":5}]`
	if got := changesString(settingChanges(req, before, &after)); got != want {
		t.Fatalf("changes %s, want %s", got, want)
	}
	// The view after could not be read: the values asked stand for it.
	want = `[{"field":"future_setting","old":null,"new":12},{"field":"max_active","old":10,"new":20},{"field":"refill_size","old":5,"new":5}]`
	if got := changesString(settingChanges(req, before, nil)); got != want {
		t.Fatalf("changes without the view after %s, want %s", got, want)
	}
}

// changesString is c as the audit log's JSON.
func changesString(c []audit.Change) string {
	b, _ := json.Marshal(c) // changes of raw JSON values always marshal
	return string(b)
}
