package linedoc

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/engine/queue"
)

// TestEncodeBounded: whatever the line's length and however many samples
// its snapshot took, the document is valid JSON of at most MaxBytes that
// keeps the first and last samples in order, and equal lines give equal
// bytes and ETags.
func TestEncodeBounded(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		n := 2 + r.IntN(400)
		l := queue.Line{Read: time.UnixMilli(1_800_000_000_000 + r.Int64N(1e9)), Waiting: r.Int64N(100_000_000), NearHead: r.Int64N(5000),
			TickReach: 1 + r.Int64N(1000), RefillSize: 1 + r.IntN(100000), RefillInterval: time.Duration(1+r.IntN(60_000)) * time.Millisecond,
			Complete: true, HeldMax: r.Int64N(10)}
		rank, seq := int64(0), int64(1)+r.Int64N(1e12)
		for range n {
			l.Ranks = append(l.Ranks, rank)
			l.Arrivals = append(l.Arrivals, seq)
			rank += 1 + r.Int64N(1_000_000)
			seq += 1 + r.Int64N(5_000_000)
		}
		doc := Encode("a-long-queue-name-of-sixty-four-characters-at-most-0123456789abc", l)
		if len(doc.Body) > MaxBytes {
			t.Fatalf("%d samples: %d bytes", n, len(doc.Body))
		}
		var b Body
		if err := json.Unmarshal(doc.Body, &b); err != nil {
			t.Fatal(err)
		}
		if len(b.Samples) < 2 || b.Samples[0] != [2]int64{l.Ranks[0], l.Arrivals[0]} || b.Samples[len(b.Samples)-1] != [2]int64{l.Ranks[n-1], l.Arrivals[n-1]} {
			t.Fatalf("%d samples: first/last not kept: %v", n, b.Samples)
		}
		for i := 1; i < len(b.Samples); i++ {
			if b.Samples[i][0] <= b.Samples[i-1][0] || b.Samples[i][1] <= b.Samples[i-1][1] {
				t.Fatalf("samples out of order: %v", b.Samples)
			}
		}
		if again := Encode("a-long-queue-name-of-sixty-four-characters-at-most-0123456789abc", l); string(again.Body) != string(doc.Body) || again.ETag != doc.ETag {
			t.Fatal("the same line encoded twice differs")
		}
	}
}
