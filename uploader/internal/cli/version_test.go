package cli

import (
	"bytes"
	"context"
	"runtime/debug"
	"strings"
	"testing"
)

// tbup --version and tbup version print the version on stdout and succeed.
func TestVersionCommand(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"-version"}, {"version"}} {
		var out, errOut bytes.Buffer
		err := Run(context.Background(), Env{Stdout: &out, Stderr: &errOut, Getenv: func(string) string { return "" }}, args)
		if err != nil || !strings.HasPrefix(out.String(), "tbup ") || strings.Count(out.String(), "\n") != 1 {
			t.Errorf("tbup %s: %v; stdout %q, stderr %q; want one line naming the version", args[0], err, out.String(), errOut.String())
		}
	}
}

// The version is the module's, with the VCS revision when the build has
// one, else "devel".
func TestVersionString(t *testing.T) {
	rev := []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.time", Value: "2026-11-27T16:00:00Z"}}
	for _, tc := range []struct {
		name string
		info *debug.BuildInfo
		want string
	}{
		{"no build info", nil, "tbup devel"},
		{"go run", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "tbup devel"},
		{"go install module@version", &debug.BuildInfo{Main: debug.Module{Version: "v0.3.1"}}, "tbup v0.3.1"},
		{"built from a checkout", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: rev}, "tbup devel (revision 0123456789ab, 2026-11-27T16:00:00Z)"},
		{"modified checkout", &debug.BuildInfo{Main: debug.Module{Version: "v0.3.1"},
			Settings: append(rev[:2:2], debug.BuildSetting{Key: "vcs.modified", Value: "true"})}, "tbup v0.3.1 (revision 0123456789ab, 2026-11-27T16:00:00Z, modified)"},
	} {
		if got := versionString(tc.info); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
