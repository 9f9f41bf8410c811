package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
)

const usage = `usage:
  deploycheck dockerfile [-context DIR] FILE
  deploycheck compose -services NAME[,NAME...] FILE
  deploycheck terraform [-schema PROVIDER=DIR,...] [-tbhub-rules] DIR
`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var problems []string
	var err error
	switch args[0] {
	case "compose":
		fs := flag.NewFlagSet("compose", flag.ContinueOnError)
		fs.SetOutput(stderr)
		services := fs.String("services", "", "comma-separated SERVICE build arguments the Dockerfile accepts")
		if fs.Parse(args[1:]) != nil || fs.NArg() != 1 || *services == "" {
			fmt.Fprint(stderr, usage)
			return 2
		}
		problems, err = checkCompose(ctx, fs.Arg(0), strings.Split(*services, ","))
	case "dockerfile":
		fs := flag.NewFlagSet("dockerfile", flag.ContinueOnError)
		fs.SetOutput(stderr)
		contextDir := fs.String("context", ".", "build context directory")
		if fs.Parse(args[1:]) != nil || fs.NArg() != 1 {
			fmt.Fprint(stderr, usage)
			return 2
		}
		problems, err = checkDockerfile(fs.Arg(0), *contextDir)
	case "terraform":
		fs := flag.NewFlagSet("terraform", flag.ContinueOnError)
		fs.SetOutput(stderr)
		schemaFlag := fs.String("schema", "", "provider schemas: NAME=DIR of its @cdktf/provider-NAME package, comma-separated")
		rules := fs.Bool("tbhub-rules", false, "also check what a tbhub deployment must set (deployRules)")
		if fs.Parse(args[1:]) != nil || fs.NArg() != 1 {
			fmt.Fprint(stderr, usage)
			return 2
		}
		schema := map[string]string{}
		for _, kv := range strings.Split(*schemaFlag, ",") {
			if name, dir, ok := strings.Cut(kv, "="); ok {
				schema[name] = dir
			}
		}
		problems, err = checkTerraform(fs.Arg(0), schema)
		if err == nil && *rules {
			var more []string
			more, err = checkDeployRules(fs.Arg(0))
			problems = append(problems, more...)
		}
	default:
		fmt.Fprint(stderr, usage)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "deploycheck %s: %v\n", args[0], err)
		return 1
	}
	for _, p := range problems {
		fmt.Fprintln(stderr, p)
	}
	if len(problems) > 0 {
		fmt.Fprintf(stderr, "deploycheck %s: %d problem(s)\n", args[0], len(problems))
		return 1
	}
	fmt.Fprintf(stdout, "deploycheck %s: ok\n", args[0])
	return 0
}
