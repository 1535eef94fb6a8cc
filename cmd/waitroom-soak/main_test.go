package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// Bad flags stop before anything starts, with status 2 and a reason.
func TestRunRefusesBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-faults", "kill-replica,explode"}, `unknown fault "explode"`},
		{[]string{"-users", "0"}, "at least 1"},
		{[]string{"-duration", "1s"}, "at least 3s"},
		{[]string{"-nosuchflag"}, "flag provided but not defined"},
	} {
		var out, log bytes.Buffer
		code, err := run(context.Background(), tc.args, &out, &log)
		got := log.String()
		if err != nil {
			got += err.Error()
		}
		if code != 2 || !strings.Contains(got, tc.want) || out.Len() != 0 {
			t.Errorf("%v: status %d, said %q, printed %q; want 2 and %q", tc.args, code, got, out.String(), tc.want)
		}
	}
}
