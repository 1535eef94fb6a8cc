package publicapi

import "testing"

// Any cursor a client sends (the query crosses the trust boundary) is
// either refused or a place the list has (line 0 or more, place 1 or
// more), and the cursor the route gives for it reads back the same.
func FuzzParseDrawCursor(f *testing.F) {
	for _, s := range []string{"", "0.1", "2.5000", "-1.1", "0.0", "1.", ".1", "1.2.3", "+0.+1", "9999999999999999999.1", "0.9223372036854775807", " 0.1", "0x1.1", "1e3.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, ok := parseDrawCursor(s)
		if !ok {
			return
		}
		if c.line < 0 || c.place < 1 {
			t.Fatalf("%q accepted as line %d, place %d", s, c.line, c.place)
		}
		if back, ok := parseDrawCursor(c.String()); !ok || back != c {
			t.Fatalf("%q: the cursor given for it, %q, reads %+v, %v", s, c.String(), back, ok)
		}
	})
}
