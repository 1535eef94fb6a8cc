package main

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// Workers start in order and stop in reverse; one that fails to start
// stops the ones started before it, and none after it starts.
func TestWorkersStartInOrderStopInReverse(t *testing.T) {
	var events []string
	named := func(name string) worker {
		return func(context.Context) (func(), error) {
			events = append(events, "start "+name)
			return func() { events = append(events, "stop "+name) }, nil
		}
	}
	failing := func(context.Context) (func(), error) { return nil, errors.New("no") }

	for _, c := range []struct {
		name    string
		workers []worker
		fails   bool
		want    []string
	}{
		{"all start", []worker{named("a"), named("b"), named("c")}, false,
			[]string{"start a", "start b", "start c", "stop c", "stop b", "stop a"}},
		{"the second fails", []worker{named("a"), failing, named("c")}, true,
			[]string{"start a", "stop a"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			events = nil
			a := &app{workers: c.workers}
			stop, err := a.start(context.Background())
			if (err != nil) != c.fails {
				t.Fatalf("start: %v, want failure %v", err, c.fails)
			}
			stop()
			if !slices.Equal(events, c.want) {
				t.Errorf("events %q, want %q", events, c.want)
			}
		})
	}
}

// A loop runs until stopped, and stop returns once it has ended.
func TestLoopStopsAndWaits(t *testing.T) {
	ended := false
	stop, err := loop(func(ctx context.Context) {
		<-ctx.Done()
		ended = true
	})(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if !ended { // no race: stop waited for the goroutine's end
		t.Error("stop returned before the loop ended")
	}
}
