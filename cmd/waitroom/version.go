package main

import (
	"fmt"
	"io"
	"runtime"

	"github.com/waitroom/waitroom/internal/infra/version"
)

// versionCommand runs `waitroom version`: the build's version, the Go it
// was built with and its platform, the three things a bug report needs.
func versionCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintln(stderr, "usage: waitroom version")
		return 2
	}
	fmt.Fprintf(stdout, "waitroom %s (%s, %s/%s)\n", version.String(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return 0
}
