package procstat

import (
	"os"
	"testing"
)

func TestParseTicks(t *testing.T) {
	got, err := ParseTicks("1234 (a (b) c) S 1 2 3 4 5 6 7 8 9 10 700 45 0 0 20 0 8 0 100")
	if err != nil || got != 745 {
		t.Fatalf("got %d, %v", got, err)
	}
	for _, bad := range []string{"", "1234 no parens", "1 (x) S 1 2", "1 (x) S 1 2 3 4 5 6 7 8 9 10 u s 0"} {
		if _, err := ParseTicks(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	if _, err := CPUTicks(os.Getpid()); err != nil {
		t.Fatal(err)
	}
}
