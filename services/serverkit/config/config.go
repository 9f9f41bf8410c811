// Package config is how every tbhub server binary (tbhub, write-service,
// read-service, frontend) is configured: flags, each of which can also be
// set by an environment variable named TBHUB_ and the flag's name in upper
// case with underscores (--read-service: TBHUB_READ_SERVICE), plus a few
// variables other software defines (Cloud Run's PORT, GOOGLE_CLOUD_PROJECT,
// OTEL_EXPORTER_OTLP_ENDPOINT) and, for one release, the names older
// releases read, with a warning.
//
// Precedence, highest first: the command line, TBHUB_<FLAG>, the aliases in
// the order given, the flag's default. Only a binary's assembly (its main,
// or the package main calls: tbhubcmd, readservice, frontend, readpath,
// uploader's cli) defines flags, binding the Settings the library packages
// describe, and calls Parse, with os.LookupEnv; packages below take values
// and never read the environment themselves (assembly_test.go checks).
package config

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
)

// Env looks up one environment variable: os.LookupEnv, or a map in tests.
type Env func(name string) (string, bool)

// MapEnv is an Env over a map, for tests.
func MapEnv(m map[string]string) Env {
	return func(name string) (string, bool) {
		v, ok := m[name]
		return v, ok
	}
}

// Alias is another environment variable that sets a flag when neither the
// command line nor the flag's TBHUB_ variable does.
type Alias struct {
	// Var is the variable's name, e.g. "PORT".
	Var string
	// Flag is the name of the flag it sets.
	Flag string
	// Value turns the variable's value into the flag's (e.g. a port into
	// ":PORT"); the value as it is if nil.
	Value func(string) string
	// Deprecated variables still work, with a warning naming the flag's
	// TBHUB_ variable; they go away in the next release.
	Deprecated bool
}

// Port is Cloud Run's PORT setting the listen address flag addrFlag to
// ":PORT".
func Port(addrFlag string) Alias {
	return Alias{Var: "PORT", Flag: addrFlag, Value: func(p string) string { return ":" + p }}
}

// Renamed is a variable an older release read, now the flag's TBHUB_
// variable: it still works for one release, with a warning.
func Renamed(oldVar, flagName string) Alias {
	return Alias{Var: oldVar, Flag: flagName, Deprecated: true}
}

// EnvName is the variable that sets the flag named flagName.
func EnvName(flagName string) string {
	return "TBHUB_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// Parse sets fs's flags from env (TBHUB_<FLAG>, then the aliases), then
// parses args, which win. Each flag's usage text gets its variable's name.
// Warnings about deprecated variables, like flag's own messages, go to
// fs.Output(). A value that does not parse is an error naming the variable.
// Positional arguments are refused.
//
// Args asking for usage (WantsHelp) make it return flag.ErrHelp at once,
// having printed nothing and set nothing: the caller prints the usage
// where asked-for output goes (PrintUsage to stdout) and exits 0.
func Parse(fs *flag.FlagSet, args []string, env Env, aliases ...Alias) error {
	fs.VisitAll(func(f *flag.Flag) { f.Usage += " [$" + EnvName(f.Name) + "]" })
	if WantsHelp(args) {
		return flag.ErrHelp
	}
	fromEnv := map[string]bool{}
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		name := EnvName(f.Name)
		if v, ok := env(name); ok && err == nil {
			if serr := f.Value.Set(v); serr != nil {
				err = fmt.Errorf("%s=%q: %w", name, v, serr)
			}
			fromEnv[f.Name] = true
		}
	})
	if err != nil {
		return err
	}
	for _, a := range aliases {
		f := fs.Lookup(a.Flag)
		if f == nil {
			return fmt.Errorf("config: alias %s names no flag --%s", a.Var, a.Flag)
		}
		v, ok := env(a.Var)
		if !ok || v == "" {
			continue
		}
		if a.Deprecated {
			fmt.Fprintf(fs.Output(), "%s: %s is deprecated and will stop working in the next release; set %s (or --%s)\n",
				fs.Name(), a.Var, EnvName(a.Flag), a.Flag)
		}
		if fromEnv[a.Flag] {
			continue
		}
		if a.Value != nil {
			v = a.Value(v)
		}
		if serr := f.Value.Set(v); serr != nil {
			return fmt.Errorf("%s=%q: %w", a.Var, v, serr)
		}
		fromEnv[a.Flag] = true
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s: unexpected arguments %q", fs.Name(), fs.Args())
	}
	return nil
}

// WantsHelp reports whether args ask for usage: -h, -help or --help
// anywhere before a "--".
func WantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

// SetUsage makes fs's usage "Usage: " and synopsis (which may go on with
// lines saying what the command does), then every flag with its default.
func SetUsage(fs *flag.FlagSet, synopsis string) {
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
	}
}

// PrintUsage prints fs's usage to w (stdout, when it was asked for),
// leaving fs's output where it was.
func PrintUsage(fs *flag.FlagSet, w io.Writer) {
	out := fs.Output()
	fs.SetOutput(w)
	fs.Usage()
	fs.SetOutput(out)
}

// Names lists every flag of fs with the variable that sets it, in flag
// order: what docs/operations.md's tables and the tests list.
func Names(fs *flag.FlagSet) [][2]string {
	var out [][2]string
	fs.VisitAll(func(f *flag.Flag) { out = append(out, [2]string{f.Name, EnvName(f.Name)}) })
	return out
}

// PortFlag defines --port, which older releases of the read service and
// the frontend took: it sets the flag addrFlag to ":PORT", with a warning,
// for one more release.
func PortFlag(fs *flag.FlagSet, addrFlag string) {
	fs.Func("port", "deprecated, use --"+addrFlag+" :PORT", func(v string) error {
		fmt.Fprintf(fs.Output(), "%s: --port is deprecated and will stop working in the next release; use --%s :%s\n", fs.Name(), addrFlag, v)
		return fs.Set(addrFlag, ":"+v)
	})
}

// Setting is one value a library package takes, described for the flag
// set of the binaries that assemble it: libraries never see a FlagSet,
// they list their settings and an assembly Binds them. Value points at
// the field the flag sets (an *int, *int64, *float64, *string, *bool or
// *time.Duration, whose value when bound is the flag's default), or is a
// func(string) error parsing the flag's text itself.
type Setting struct {
	Name, Usage string
	Value       any
}

// Bind defines each setting as a flag on fs. Called only by a binary's
// assembly, with the settings of the packages it wires.
func Bind(fs *flag.FlagSet, settings ...Setting) {
	for _, s := range settings {
		switch p := s.Value.(type) {
		case *int:
			fs.IntVar(p, s.Name, *p, s.Usage)
		case *int64:
			fs.Int64Var(p, s.Name, *p, s.Usage)
		case *float64:
			fs.Float64Var(p, s.Name, *p, s.Usage)
		case *string:
			fs.StringVar(p, s.Name, *p, s.Usage)
		case *bool:
			fs.BoolVar(p, s.Name, *p, s.Usage)
		case *time.Duration:
			fs.DurationVar(p, s.Name, *p, s.Usage)
		case func(string) error:
			fs.Func(s.Name, s.Usage, p)
		default:
			panic(fmt.Sprintf("config: setting --%s has a value of type %T", s.Name, s.Value))
		}
	}
}
