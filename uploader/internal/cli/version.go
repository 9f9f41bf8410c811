package cli

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"
)

func init() {
	commands["version"] = command{"print tbup's version (also: tbup --version)", runVersion}
}

func runVersion(_ context.Context, env Env, args []string) error {
	fs := newFlagSet(env, "version", "")
	if err := parse(fs, args); err != nil {
		return err
	}
	info, _ := debug.ReadBuildInfo()
	_, err := fmt.Fprintln(env.Stdout, versionString(info))
	return err
}

// versionString names the build info's version: the module version (set
// by 'go install module@version'), else "devel", followed by the VCS
// revision, its time and whether the checkout was modified, when the build
// recorded them (a 'go build' in a git checkout does).
func versionString(info *debug.BuildInfo) string {
	version := "devel"
	if info == nil {
		return "tbup " + version
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		version = v
	}
	var vcs []string
	for _, key := range []string{"vcs.revision", "vcs.time", "vcs.modified"} {
		for _, s := range info.Settings {
			switch {
			case s.Key != key:
			case key == "vcs.revision":
				vcs = append(vcs, "revision "+s.Value[:min(12, len(s.Value))])
			case key == "vcs.modified" && s.Value == "true":
				vcs = append(vcs, "modified")
			case key == "vcs.time":
				vcs = append(vcs, s.Value)
			}
		}
	}
	if len(vcs) == 0 || !strings.HasPrefix(vcs[0], "revision ") {
		return "tbup " + version
	}
	return fmt.Sprintf("tbup %s (%s)", version, strings.Join(vcs, ", "))
}
