// Package version owns the build's version: what `waitroom version`,
// /healthz and the image labels say.
package version

import (
	"regexp"
	"runtime/debug"
	"strings"
)

// version is set at link time by a build that knows its release, as the
// Dockerfile and scripts/build-images.sh do:
//
//	go build -ldflags "-X github.com/waitroom/waitroom/internal/infra/version.version=v0.9.0"
//
// Empty, String derives the version from what Go recorded in the binary.
var version string

// String is the build's version: the one set at link time; else the main
// module's version when it is a release (go install ...@v0.9.0, or a build
// of a clean tagged checkout); else "devel" with the commit it was built
// from ("devel-b2d982b02f39", "+dirty" with uncommitted changes); else
// "devel".
func String() string {
	if version != "" {
		return version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	return fromBuildInfo(info)
}

// pseudoVersion matches the versions Go makes up for an untagged commit
// (golang.org/x/mod/module's pattern): they name a commit, not a release,
// and "devel" with the commit says that more plainly.
var pseudoVersion = regexp.MustCompile(`^v[0-9]+\.(0\.0-|\d+\.\d+-([^+]*\.)?0\.)\d{14}-[A-Za-z0-9]+(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`)

func fromBuildInfo(info *debug.BuildInfo) string {
	if v := info.Main.Version; strings.HasPrefix(v, "v") && !pseudoVersion.MatchString(v) {
		return v
	}
	var revision string
	var modified bool
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if revision == "" {
		return "devel"
	}
	// Twelve hex digits, as in Go's pseudo-versions: unique in any
	// repository this size, short enough to read out.
	v := "devel-" + revision[:min(len(revision), 12)]
	if modified {
		v += "+dirty"
	}
	return v
}
