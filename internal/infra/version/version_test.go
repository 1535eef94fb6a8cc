package version

import (
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	const rev = "b2d982b02f391b95b1731de0133c863f1c8b7501"
	vcs := func(modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	for _, tc := range []struct {
		name     string
		version  string
		settings []debug.BuildSetting
		want     string
	}{
		{"release", "v0.9.0", vcs("false"), "v0.9.0"},
		{"release with a pre-release", "v1.0.0-rc.1", nil, "v1.0.0-rc.1"},
		{"tagged checkout with changes", "v0.9.0+dirty", vcs("true"), "v0.9.0+dirty"},
		{"pseudo-version", "v0.0.0-20261129061641-b2d982b02f39", vcs("false"), "devel-b2d982b02f39"},
		{"pseudo-version after a tag, dirty", "v0.9.1-0.20261129061641-b2d982b02f39+dirty", vcs("true"), "devel-b2d982b02f39+dirty"},
		{"pseudo-version after a pre-release", "v1.0.0-rc.1.0.20261129061641-b2d982b02f39", vcs("false"), "devel-b2d982b02f39"},
		{"no module version", "(devel)", vcs("false"), "devel-b2d982b02f39"},
		{"no module version, dirty", "(devel)", vcs("true"), "devel-b2d982b02f39+dirty"},
		{"short revision", "(devel)", []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}}, "devel-abc"},
		{"nothing known", "(devel)", nil, "devel"},
		{"empty", "", nil, "devel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info := &debug.BuildInfo{Main: debug.Module{Path: "github.com/waitroom/waitroom", Version: tc.version}, Settings: tc.settings}
			if got := fromBuildInfo(info); got != tc.want {
				t.Errorf("fromBuildInfo(%q, %v) = %q, want %q", tc.version, tc.settings, got, tc.want)
			}
		})
	}
}

// The release builds' -X flag names the variable by its full path: this
// fails when a rename would make them say "devel" without a word.
func TestLinkTimeVersion(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	bin := filepath.Join(t.TempDir(), "printversion")
	build := exec.Command(goTool, "build", "-o", bin,
		"-ldflags", "-X github.com/waitroom/waitroom/internal/infra/version.version=v0.9.0",
		"./testdata/printversion")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != "v0.9.0" {
		t.Errorf("built with -X version=v0.9.0, String() = %q", got)
	}
}
