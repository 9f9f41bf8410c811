package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
)

// checkCompose loads file as `docker compose config` would, with every
// profile enabled, and then checks what the schema cannot: builds use
// existing Dockerfiles and contexts with a SERVICE the Dockerfile knows,
// bind-mounted files exist, and every image is pinned to a tag.
func checkCompose(ctx context.Context, file string, knownServices []string) ([]string, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(abs)
	opts, err := cli.NewProjectOptions([]string{abs},
		cli.WithName("deploycheck"),
		cli.WithWorkingDirectory(dir),
		cli.WithProfiles([]string{"*"}),
		cli.WithConsistency(true),
		cli.WithResolvedPaths(true),
		// Only the file's own defaults: the checker's environment must not
		// change the verdict.
		cli.WithEnv([]string{}),
	)
	if err != nil {
		return nil, err
	}
	project, err := cli.ProjectFromOptions(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var problems []string
	names := make([]string, 0, len(project.Services))
	for name := range project.Services {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		problems = append(problems, checkComposeService(file, project.Services[name], knownServices)...)
	}
	return problems, nil
}

func checkComposeService(file string, svc types.ServiceConfig, knownServices []string) []string {
	var problems []string
	bad := func(format string, args ...any) {
		problems = append(problems, fmt.Sprintf("%s: service %s: %s", file, svc.Name, fmt.Sprintf(format, args...)))
	}
	if svc.Build != nil {
		if st, err := os.Stat(svc.Build.Context); err != nil || !st.IsDir() {
			bad("build context %s is not a directory", svc.Build.Context)
		}
		dockerfile := svc.Build.Dockerfile
		if !filepath.IsAbs(dockerfile) {
			dockerfile = filepath.Join(svc.Build.Context, dockerfile)
		}
		if _, err := os.Stat(dockerfile); err != nil {
			bad("Dockerfile %s: %v", dockerfile, err)
		}
		arg, ok := svc.Build.Args["SERVICE"]
		switch {
		case !ok || arg == nil:
			bad("build without a SERVICE argument")
		case !slices.Contains(knownServices, *arg):
			bad("build argument SERVICE=%s is none of %v", *arg, knownServices)
		}
	} else if svc.Image == "" {
		bad("neither image nor build")
	}
	if svc.Build == nil && !pinned(svc.Image) {
		bad("image %s is not pinned to a tag or digest", svc.Image)
	}
	for _, v := range svc.Volumes {
		if v.Type != types.VolumeTypeBind {
			continue
		}
		if _, err := os.Stat(v.Source); err != nil {
			bad("bind mount source %s: %v", v.Source, err)
		}
	}
	return problems
}

// pinned reports whether an image reference names a tag other than latest
// or a digest.
func pinned(image string) bool {
	if i := lastIndex(image, '@'); i >= 0 {
		return true
	}
	slash := lastIndex(image, '/')
	colon := lastIndex(image, ':')
	if colon <= slash {
		return false
	}
	return image[colon+1:] != "latest"
}

func lastIndex(s string, c byte) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == c {
			return i
		}
	}
	return -1
}
