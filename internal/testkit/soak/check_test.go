package soak

import (
	"strings"
	"testing"
	"time"
)

// story builds a crafted record: ops at whole seconds from t0, each
// taking 100 ms.
type story struct {
	rec Record
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

func newStory() *story {
	return &story{rec: Record{
		RefillSize: 5,
		MaxRequest: 3 * time.Second,
		Settle:     4 * time.Second,
		Snap:       Snapshot{Waiting: map[string]int64{}, Entered: map[string]int64{}},
	}}
}

// ms turns a story's admission time, ms after t0, into the Redis clock's
// ms (already absolute times pass as they are).
func ms(adm int64) int64 {
	if adm == 0 || adm > 1e12 {
		return adm
	}
	return t0.UnixMilli() + adm
}

func (s *story) op(sec float64, m string, k Kind, o Outcome, status string, adm int64) *story {
	s.rec.Ops = append(s.rec.Ops, Op{Member: m, Kind: k, Sent: at(sec), Ended: at(sec + 0.1), Outcome: o, Status: status, Adm: ms(adm)})
	return s
}

func (s *story) enter(sec float64, m, status string, adm int64) *story {
	return s.op(sec, m, Enter, OK, status, adm)
}

func (s *story) status(sec float64, m, status string, adm int64) *story {
	return s.op(sec, m, Status, OK, status, adm)
}

func (s *story) waiting(m string) *story { s.rec.Snap.Waiting[m] = 1; return s }

func (s *story) entered(m string, adm int64) *story { s.rec.Snap.Entered[m] = ms(adm); return s }

func (s *story) history(iv ...Interval) *story {
	for i := range iv {
		iv[i].StartMS = ms(iv[i].StartMS)
	}
	s.rec.Snap.History = iv
	return s
}

func TestCheck(t *testing.T) {
	type counts struct{ lost, dup, inv, both, over, phantom, slow int }
	tests := []struct {
		name string
		s    *story
		want counts
	}{
		{"in order", newStory().
			enter(0, "a", "WAITING", 0).enter(1, "b", "WAITING", 0).
			status(3, "a", "ENTERED", 2000).status(4, "b", "ENTERED", 3000).
			entered("a", 2000).entered("b", 3000), counts{}},
		{"one tick admits both", newStory().
			enter(0, "a", "WAITING", 0).enter(1, "b", "WAITING", 0).
			entered("a", 2000).entered("b", 2000), counts{}},
		{"inversion", newStory().
			enter(0, "a", "WAITING", 0).enter(1, "b", "WAITING", 0).
			status(3, "b", "ENTERED", 2000).status(4, "a", "ENTERED", 3000).
			entered("a", 3000).entered("b", 2000), counts{inv: 1}},
		{"inversion: the one ahead still waits", newStory().
			enter(0, "a", "WAITING", 0).enter(1, "b", "WAITING", 0).
			status(3, "b", "ENTERED", 2000).waiting("a").entered("b", 2000), counts{inv: 1}},
		{"concurrent enters have no order", newStory().
			op(0, "a", Enter, OK, "WAITING", 0).
			// b sent before a's answer came (a ended at 0.1).
			op(0.05, "b", Enter, OK, "WAITING", 0).
			entered("a", 3000).entered("b", 2000), counts{}},
		{"re-entered: to the back, no inversion", newStory().
			enter(0, "a", "WAITING", 0).enter(1, "b", "WAITING", 0).enter(2, "a", "WAITING", 0).
			entered("b", 3000).entered("a", 4000), counts{}},
		{"left while waiting: no inversion", newStory().
			enter(0, "a", "WAITING", 0).enter(1, "b", "WAITING", 0).op(2, "a", Leave, OK, "", 0).
			entered("b", 3000).status(5, "a", "NOT_WAITING", 0), counts{}},
		{"admitted twice for one enter", newStory().
			enter(0, "a", "WAITING", 0).status(2, "a", "ENTERED", 2000).status(4, "a", "ENTERED", 4000).
			entered("a", 4000), counts{dup: 1}},
		{"admitted again after entering again", newStory().
			enter(0, "a", "WAITING", 0).status(2, "a", "ENTERED", 2000).
			enter(3, "a", "WAITING", 0).status(5, "a", "ENTERED", 5000).entered("a", 5000), counts{}},
		{"lost", newStory().
			enter(0, "a", "WAITING", 0).status(2, "a", "NOT_WAITING", 0), counts{lost: 1}},
		{"lost once admitted", newStory().
			enter(0, "a", "WAITING", 0).status(2, "a", "ENTERED", 2000).status(3, "a", "NOT_WAITING", 0), counts{lost: 1}},
		{"left: not lost", newStory().
			enter(0, "a", "WAITING", 0).op(1, "a", Leave, OK, "", 0).status(2, "a", "NOT_WAITING", 0), counts{}},
		{"done: not lost", newStory().
			enter(0, "a", "ENTERED", 1000).op(1, "a", Done, OK, "", 0).status(2, "a", "NOT_WAITING", 0), counts{}},
		{"a leave of unknown outcome may have landed", newStory().
			enter(0, "a", "WAITING", 0).op(1, "a", Leave, Unknown, "", 0).status(10, "a", "NOT_WAITING", 0), counts{}},
		{"a re-enter of unknown outcome keeps the place either way", newStory().
			enter(0, "a", "WAITING", 0).op(1, "a", Enter, Unknown, "", 0).status(10, "a", "NOT_WAITING", 0), counts{lost: 1}},
		{"a first enter of unknown outcome promises nothing", newStory().
			op(0, "a", Enter, Unknown, "", 0).status(10, "a", "NOT_WAITING", 0), counts{}},
		{"...but once seen waiting, the place must stay", newStory().
			op(0, "a", Enter, Unknown, "", 0).status(10, "a", "WAITING", 0).status(12, "a", "NOT_WAITING", 0), counts{lost: 1}},
		{"a refused call changes nothing", newStory().
			enter(0, "a", "WAITING", 0).op(1, "a", Leave, Refused, "", 0).status(2, "a", "NOT_WAITING", 0), counts{lost: 1}},
		{"answers before an unknown re-enter settles are not held against it", newStory().
			enter(0, "a", "WAITING", 0).status(2, "a", "ENTERED", 2000).
			op(3, "a", Enter, Unknown, "", 0).
			status(4, "a", "ENTERED", 2000).status(5, "a", "WAITING", 0). // within Settle (4 s after 3.1)
			status(8, "a", "ENTERED", 8000).entered("a", 8000), counts{}},
		{"an acknowledged re-enter rolled back: the old place admitted", newStory().
			enter(0, "a", "WAITING", 0).enter(1, "b", "WAITING", 0).
			enter(2, "b", "WAITING", 0). // lost: b keeps its place from 1 s
			status(4, "b", "ENTERED", at(1.5).UnixMilli()).status(5, "a", "ENTERED", at(4.5).UnixMilli()).
			entered("b", at(1.5).UnixMilli()).entered("a", at(4.5).UnixMilli()), counts{lost: 1}},
		{"put back in line after an admission", newStory().
			enter(0, "a", "WAITING", 0).status(2, "a", "ENTERED", 2000).status(3, "a", "WAITING", 0).waiting("a"), counts{both: 1}},
		{"both waiting and entered in Redis", newStory().
			enter(0, "a", "WAITING", 0).waiting("a").entered("a", 2000), counts{both: 1}},
		{"over rate in the history", newStory().
			history(Interval{1000, 5}, Interval{2000, 6}), counts{over: 1}},
		{"over rate as the clients saw it", newStory().
			enter(0, "a", "ENTERED", 1000).enter(0, "b", "ENTERED", 1100).enter(0, "c", "ENTERED", 1200).
			enter(0, "d", "ENTERED", 1300).enter(0, "e", "ENTERED", 1400).enter(0, "f", "ENTERED", 1500).
			enter(0, "g", "ENTERED", 2000).
			history(Interval{1000, 5}, Interval{2000, 1}), counts{over: 1}},
		{"a status of unknown outcome changes nothing", newStory().
			op(0, "a", Enter, OK, "WAITING", 0).
			op(1, "a", Status, Unknown, "", 0).waiting("a"), counts{}},
		{"phantom", newStory().waiting("x"), counts{phantom: 1}},
		{"a phantom from an unanswered enter", func() *story { s := newStory().waiting("x"); s.rec.Anonymous = 1; return s }(), counts{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Check(tt.s.rec)
			got := counts{r.Lost, r.Duplicated, r.Inversions, r.Both, r.OverRate, r.Phantoms, r.Slow}
			if got != tt.want {
				t.Errorf("got %+v, want %+v; violations: %+v", got, tt.want, r.Violations)
			}
			if r.Failed() != (tt.want != counts{}) {
				t.Errorf("Failed() = %v with violations %+v", r.Failed(), r.Violations)
			}
		})
	}
}

func TestCheckSlow(t *testing.T) {
	s := newStory()
	s.rec.Ops = append(s.rec.Ops, Op{Member: "a", Kind: Status, Sent: at(0), Ended: at(3.5), Outcome: Unknown})
	r := Check(s.rec)
	if r.Slow != 1 || r.Longest != 3500*time.Millisecond || !strings.Contains(r.Violations[0].Detail, "3.5s") {
		t.Fatalf("slow %d, longest %s, violations %+v", r.Slow, r.Longest, r.Violations)
	}
}
