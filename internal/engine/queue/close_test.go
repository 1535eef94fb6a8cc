package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
)

// TestCloseSoldOut closes a line with people inside and waiting, against
// a real Redis: enters are refused, everyone waiting is told CLOSED at
// their next look (before and after the tick drops their places),
// everyone inside keeps the admission, and a reopening takes enters again
// while the dropped places stay dropped.
func TestCloseSoldOut(t *testing.T) {
	ctx := context.Background()
	s, q, rdb := newStore(t, hour)
	for i := range 5 {
		enter(t, s, q, fmt.Sprintf("u%d", i)) // u0, u1 in on the tokens; u2..u4 wait
	}
	c := Closing{Message: map[string]string{"en": "Sold out.", "ko": "매진되었습니다."}, ReopensAt: time.Now().Add(time.Hour)}
	res, err := NewInspector(s).Close(ctx, q, c, json.RawMessage(`{"kind":"admin","name":"ops"}`))
	if err != nil || !res.Changed || res.At.IsZero() {
		t.Fatalf("close: %+v, %v", res, err)
	}
	if _, err := s.Enter(ctx, q, Entry{Caller: Caller{User: "late"}}); !errors.Is(err, ErrSaleClosed) {
		t.Fatalf("enter while closed: %v, want ErrSaleClosed", err)
	}
	if _, err := s.Enter(ctx, q, Entry{Caller: Caller{User: "u0"}}); !errors.Is(err, ErrSaleClosed) {
		t.Fatalf("an admitted user's enter while closed: %v, want ErrSaleClosed (it would give the admission up)", err)
	}
	if tk := status(t, s, q, "u3"); tk.Status != Closed || tk.ClosedAt.IsZero() || tk.Position != 0 {
		t.Fatalf("a waiting place before the tick: %+v, want CLOSED", tk)
	}
	if tk := status(t, s, q, "u0"); tk.Status != Entered {
		t.Fatalf("an admitted user: %s, want ENTERED (admissions are kept)", tk.Status)
	}
	tick(t, s, rdb, q)
	if n := rdb.ZCard(ctx, keysFor(q).waiting).Val(); n != 0 {
		t.Fatalf("%d places left in the line after the tick, want 0", n)
	}
	if tk := status(t, s, q, "u4"); tk.Status != Closed || tk.Reason != ReasonClosed {
		t.Fatalf("a dropped place: %+v, want CLOSED, reason closed", tk)
	}
	if tk := status(t, s, q, "u1"); tk.Status != Entered {
		t.Fatalf("an admitted user after the tick: %s, want ENTERED", tk.Status)
	}
	text, err := s.Text(ctx, q)
	if err != nil || text.Closed.In("ko") != "매진되었습니다." || text.Closed.In("de") != "Sold out." ||
		!text.Closed.ReopensAt.Equal(c.ReopensAt.Truncate(time.Millisecond)) {
		t.Fatalf("text: %+v, %v", text.Closed, err)
	}

	res, err = NewInspector(s).Reopen(ctx, q, nil)
	if err != nil || !res.Changed {
		t.Fatalf("reopen: %+v, %v", res, err)
	}
	if res, _ = NewInspector(s).Reopen(ctx, q, nil); res.Changed {
		t.Fatal("a second reopen changed something")
	}
	if tk := status(t, s, q, "u2"); tk.Status != NotWaiting || tk.Reason != ReasonClosed {
		t.Fatalf("a dropped place after the reopening: %+v, want NOT_WAITING, reason closed", tk)
	}
	if tk := enter(t, s, q, "late"); tk.Status != Waiting && tk.Status != Entered {
		t.Fatalf("enter after the reopening: %s", tk.Status)
	}
	if text, _ = s.Text(ctx, q); len(text.Closed.Message) != 0 {
		t.Fatalf("the message outlived the reopening: %v", text.Closed.Message)
	}
}

// TestCloseDropsInChunks: a line of 25,000 (in the general lane and a
// lane, with some held aside) is dropped drawBatch places a tick call,
// each call applying nothing until the last, so no call is long.
func TestCloseDropsInChunks(t *testing.T) {
	ctx := context.Background()
	s, q, rdb := newStore(t, Settings{RefillSize: 10, RefillInterval: time.Hour, SessionTTL: time.Hour, Lanes: Lanes{{Name: "vip", Share: 0.5}}})
	fill := func(key string, from, n int) {
		for i := from; i < from+n; i += 1000 {
			var z []any
			for j := i; j < min(i+1000, from+n); j++ {
				z = append(z, j+1, fmt.Sprintf("p%d", j))
			}
			if err := rdb.Do(ctx, append([]any{"ZADD", key}, z...)...).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	vip := keysForLine(q, "vip")
	rdb.SAdd(ctx, keysFor(q).lanes, "vip") // as the lane's first enter does
	fill(keysFor(q).waiting, 0, 20000)
	fill(keysFor(q).held, 20000, 1000)
	fill(vip.waiting, 21000, 4000)
	if _, err := NewInspector(s).Close(ctx, q, Closing{Message: map[string]string{"en": "Sold out"}}, nil); err != nil {
		t.Fatal(err)
	}
	forceNextInterval(t, rdb, q)
	for call := 1; ; call++ {
		res, err := s.Tick(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if call < 3 && (res.Applied || res.UntilNext != 0) {
			t.Fatalf("call %d: applied %v, until next %s; want a chunk dropped and a call again at once", call, res.Applied, res.UntilNext)
		}
		if call == 3 {
			if !res.Applied || res.Moved != 0 {
				t.Fatalf("call 3: applied %v, moved %d; want the tick applied, nobody admitted", res.Applied, res.Moved)
			}
			break
		}
	}
	for _, k := range []string{keysFor(q).waiting, keysFor(q).held, vip.waiting} {
		if n := rdb.ZCard(ctx, k).Val(); n != 0 {
			t.Errorf("%s holds %d places", k, n)
		}
	}
	if n := rdb.ZCard(ctx, keysFor(q).gone).Val(); n != 25000 {
		t.Errorf("%d places recorded as gone, want 25,000", n)
	}
}

// FuzzClosingValidate: whatever the message and reopening, Validate
// never panics, and what it accepts is within the bounds: at least one
// language, tags as language tags, one line of at most
// MaxClosedMessageRunes of printable text each, at most
// MaxClosedMessageBytes in all, a reopening in the next year.
func FuzzClosingValidate(f *testing.F) {
	f.Add(`{"en":"Sold out","ko":"매진"}`, int64(3600))
	f.Add(`{"en":"a\nb"}`, int64(0))
	f.Add(`{"en":"\u202eevil"}`, int64(-5))
	f.Add(`{"x-y-z-w":"a"}`, int64(1<<40))
	f.Add(`{"en":""}`, int64(60))
	f.Add(`{}`, int64(60))
	f.Add(`{"en":"`+strings.Repeat("가", MaxClosedMessageRunes+1)+`"}`, int64(60))
	now := time.Unix(1_700_000_000, 0)
	f.Fuzz(func(t *testing.T, raw string, reopenSec int64) {
		var m map[string]string
		if json.Unmarshal([]byte(raw), &m) != nil {
			return
		}
		c := Closing{Message: m}
		if reopenSec != 0 {
			c.ReopensAt = now.Add(time.Duration(reopenSec%(1<<33)) * time.Second)
		}
		if err := c.Validate(now); err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) || (fe.Field != "message" && fe.Field != "reopens_at") {
				t.Fatalf("refusal %v is not a FieldError of message or reopens_at", err)
			}
			return
		}
		if c.In("en") == "" || len(m) > MaxTextLangs || len(encodeText(m)) > MaxClosedMessageBytes {
			t.Fatalf("accepted %q", raw)
		}
		for lang, s := range m {
			if !langTag.MatchString(lang) || !utf8.ValidString(s) || utf8.RuneCountInString(s) > MaxClosedMessageRunes {
				t.Fatalf("accepted %q: %q", lang, s)
			}
			for _, r := range s {
				if unicode.IsControl(r) || (r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069) {
					t.Fatalf("accepted %q with %U", s, r)
				}
			}
		}
		if !c.ReopensAt.IsZero() && (!c.ReopensAt.After(now) || c.ReopensAt.Sub(now) > MaxReopenAhead) {
			t.Fatalf("accepted reopens_at %s", c.ReopensAt)
		}
	})
}
