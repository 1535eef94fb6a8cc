package httpapi

import (
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
)

// With sliding sessions the pass lasts SessionMax, each successful check
// at /api/v1/verify renews the admission past its session TTL, and an
// admission left unchecked for a TTL ends (its pass no longer opens).
func TestSlidingSessionThroughVerify(t *testing.T) {
	t.Parallel()
	settings := queue.Settings{RefillSize: 3, RefillInterval: time.Hour, SessionTTL: 1500 * time.Millisecond, SessionMax: time.Minute}
	e := newEnv(t, redistest.Client(t), settings, testTimeout, Options{})
	srv := e
	tk, _ := e.enterAnon()
	if tk.Status != queue.Entered {
		t.Fatalf("not admitted: %+v", tk)
	}
	c, err := srv.passes.Verify(tk.Pass)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Expires.Sub(c.AdmittedAt); got < settings.SessionMax-time.Second || got > settings.SessionMax {
		t.Fatalf("pass lifetime %s, want SessionMax (%s) to the second", got, settings.SessionMax)
	}
	// Checked every 300 ms for twice the TTL: open throughout.
	for end := c.AdmittedAt.Add(2 * settings.SessionTTL); time.Now().Before(end); time.Sleep(300 * time.Millisecond) {
		if r := e.verify(tk.Pass); r.status != 200 {
			t.Fatalf("%s after admission, a renewed session's pass: %d %s", time.Since(c.AdmittedAt), r.status, r.body)
		}
	}
	// The waiting page still names the same admission.
	if st := decodeTicket(t, e.statusOf(bearerHeader(tk.PlaceToken)...)); st.Status != queue.Entered {
		t.Fatalf("status of a renewed session: %+v", st)
	}
	// Left alone for longer than the TTL, the session ends.
	time.Sleep(settings.SessionTTL + 300*time.Millisecond)
	wantError(t, e.verify(tk.Pass), 401, "invalid_pass")
	if st := decodeTicket(t, e.statusOf(bearerHeader(tk.PlaceToken)...)); st.Status != queue.NotWaiting {
		t.Fatalf("status after the session ended: %+v", st)
	}
}
