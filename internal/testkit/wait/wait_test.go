package wait_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/testkit/wait"
)

func TestForReturnsOnceTheConditionHolds(t *testing.T) {
	calls := 0
	wait.For(t, time.Minute, "the third call", func() (bool, string) {
		calls++
		return calls == 3, fmt.Sprintf("%d calls", calls)
	})
	if calls != 3 {
		t.Fatalf("%d calls, want 3: For must stop at the first true", calls)
	}
}

// fatalRecorder is a testing.TB that records Fatalf instead of ending
// the test, to see what For reports.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	panic(r)
}

func TestForReportsTheLastStateOnTimeout(t *testing.T) {
	rec := &fatalRecorder{TB: t}
	calls := 0
	func() {
		defer func() {
			if p := recover(); p != rec {
				t.Fatalf("For did not fail the test on timeout (recovered %v)", p)
			}
		}()
		wait.For(rec, 30*time.Millisecond, "something that never happens", func() (bool, string) {
			calls++
			return false, fmt.Sprintf("call %d", calls)
		})
	}()
	for _, want := range []string{"something that never happens", fmt.Sprintf("last saw: call %d", calls)} {
		if !strings.Contains(rec.msg, want) {
			t.Errorf("failure %q does not say %q", rec.msg, want)
		}
	}
}
