package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/linter"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
)

// checkDockerfile parses file with BuildKit's own Dockerfile parser and
// instruction reader (what `docker build` runs first), reports BuildKit's
// lint warnings, and checks that every path a COPY takes from the build
// context exists under contextDir.
func checkDockerfile(file, contextDir string) ([]string, error) {
	src, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	res, err := parser.Parse(bytes.NewReader(src))
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", file, err)}, nil
	}
	var problems []string
	for _, w := range res.Warnings {
		problems = append(problems, fmt.Sprintf("%s:%d: %s", file, w.Location.Start.Line, w.Short))
	}
	lint := linter.New(&linter.Config{Warn: func(rule, _, _, msg string, loc []parser.Range) {
		line := 0
		if len(loc) > 0 {
			line = loc[0].Start.Line
		}
		problems = append(problems, fmt.Sprintf("%s:%d: %s: %s", file, line, rule, msg))
	}})
	stages, _, err := instructions.Parse(res.AST, lint)
	if err != nil {
		return append(problems, fmt.Sprintf("%s: %v", file, err)), nil
	}
	for _, st := range stages {
		for _, cmd := range st.Commands {
			cp, ok := cmd.(*instructions.CopyCommand)
			if !ok || cp.From != "" {
				continue
			}
			for _, p := range cp.SourcePaths {
				if strings.ContainsAny(p, "*?[$") {
					continue
				}
				if _, err := os.Stat(filepath.Join(contextDir, p)); err != nil {
					problems = append(problems, fmt.Sprintf("%s:%d: COPY source %s is not in the build context", file, cp.Location()[0].Start.Line, p))
				}
			}
		}
	}
	return problems, nil
}
