package loglimit

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestCut(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"/short", 256, "/short"},
		{strings.Repeat("a", 256), 256, strings.Repeat("a", 256)},
		{strings.Repeat("a", 300), 256, strings.Repeat("a", 256) + "…[+44 of 300 bytes]"},
		{"ab김", 3, "ab…[+3 of 5 bytes]"}, // never half a rune
		{"\xff\xff\xff\xff\xff\xff", 2, "\xff\xff…[+4 of 6 bytes]"},
	} {
		if got := Cut(tc.s, tc.n); got != tc.want {
			t.Errorf("Cut(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
	long := String(strings.Repeat("é", 1<<20))
	if len(long) > MaxString+40 || !utf8.ValidString(long) {
		t.Errorf("String of 2 MB: %d bytes, valid UTF-8 %v", len(long), utf8.ValidString(long))
	}
}

func TestHandlerLimitsLines(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(Handler(slog.NewTextHandler(&buf, nil), 3, time.Hour))
	for range 1000 {
		log.Warn("http: something a client can cause " + strings.Repeat("x", 4096))
	}
	if n := strings.Count(buf.String(), "\n"); n != 3 {
		t.Fatalf("%d lines from 1000 within one period, want 3", n)
	}
	if buf.Len() > 3*(maxMessage+200) {
		t.Fatalf("%d bytes for 3 lines", buf.Len())
	}

	// A new period lets lines through again and counts the ones dropped.
	buf.Reset()
	h := Handler(slog.NewTextHandler(&buf, nil), 1, 50*time.Millisecond)
	log = slog.New(h)
	log.Warn("one")
	log.Warn("two")
	log.Warn("three")
	time.Sleep(60 * time.Millisecond)
	log.With("k", "v").Warn("four")
	out := buf.String()
	if strings.Contains(out, "two") || !strings.Contains(out, "msg=four k=v dropped=2") {
		t.Fatalf("log:\n%s", out)
	}
}
