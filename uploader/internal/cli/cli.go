// Package cli implements tbup's subcommands: one flag set per command, parsed from
// the arguments and environment, each running against a context that Ctrl-C cancels.
package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"go.opentelemetry.io/otel/trace"

	"github.com/tbhub/tbhub/uploader/internal/client"
)

// Env is what a command may touch of the process.
type Env struct {
	Stdout, Stderr io.Writer
	Getenv         func(string) string
}

type command struct {
	summary string
	run     func(ctx context.Context, env Env, args []string) error
}

var commands = map[string]command{
	"inspect": {"show what an upload of a logdir would send, without a server", runInspect},
	"upload":  {"upload a logdir and keep it in sync (--one-shot to upload once)", runUpload},
	"auth":    {"sign in (login --token T), sign out (logout), show who you are (whoami), or the name others see (display-name)", runAuth},
}

// ErrUsage marks a command line that could not be understood; usage was printed.
var ErrUsage = errors.New("usage error")

// helpError ends a command that was asked for its usage (-h, --help):
// Run prints the usage it holds to stdout and succeeds.
type helpError struct{ usage []byte }

func (*helpError) Error() string { return "help requested" }

// Run dispatches args (without the program name) to a subcommand.
func Run(ctx context.Context, env Env, args []string) error {
	if len(args) >= 2 && args[0] == "help" { // tbup help CMD [SUB]: its -h
		args = append(args[1:], "-h")
	}
	if len(args) == 0 || isHelp(args[0]) || args[0] == "help" {
		if len(args) == 0 {
			usage(env.Stderr)
			return ErrUsage
		}
		// Asked for: to stdout, so that `tbup -h | less` works.
		usage(env.Stdout)
		return nil
	}
	if args[0] == "--version" || args[0] == "-version" {
		args[0] = "version"
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(env.Stderr, "tbup: unknown command %q\n\n", args[0])
		usage(env.Stderr)
		return ErrUsage
	}
	// One trace per command: the server's spans and logs of it share an id,
	// which a failure the server reported names, for its operator.
	ctx = client.StartTrace(ctx)
	err := cmd.run(ctx, env, args[1:])
	if h := (*helpError)(nil); errors.As(err, &h) {
		_, err := env.Stdout.Write(h.usage)
		return err
	}
	if err != nil && client.ServerFailed(ctx) {
		return &tracedError{err: err, traceID: trace.SpanContextFromContext(ctx).TraceID().String()}
	}
	return err
}

// tracedError is a failure the server answered, with the trace id its logs
// of the command carry on a line after it: printed as the error is, it
// comes after the failure it belongs to, not before.
type tracedError struct {
	err     error
	traceID string
}

func (e *tracedError) Error() string {
	return e.err.Error() + "\ntbup: the server's logs of this command carry trace id " + e.traceID
}

func (e *tracedError) Unwrap() error { return e.err }

func usage(w io.Writer) {
	fmt.Fprintln(w, "tbup uploads TensorBoard logdirs to a tbhub server.\n\nUsage: tbup <command> [flags]\n\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-16s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'tbup <command> -h' for a command's flags.")
}

// isHelp says whether an argument asks for usage.
func isHelp(arg string) bool {
	return arg == "-h" || arg == "--help" || arg == "-help"
}

// newFlagSet returns a flag set that reports errors instead of exiting.
func newFlagSet(env Env, name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet("tbup "+name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: tbup %s %s\n\nFlags:\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses flags, for a command that takes no arguments. Asked for
// usage (-h, --help, anywhere before "--"), it returns a helpError holding
// it, before anything else is checked: the command returns it, and Run
// prints the usage and succeeds.
func parse(fs *flag.FlagSet, args []string) error {
	_, err := parseArgs(fs, args, 0)
	return err
}

// parseArgs is parse for a command that takes up to max arguments besides
// its flags, before, between or after them (all after "--"); it returns them.
func parseArgs(fs *flag.FlagSet, args []string, max int) ([]string, error) {
	for _, a := range args {
		if a == "--" {
			break
		}
		if isHelp(a) {
			return nil, usageOf(fs)
		}
	}
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, ErrUsage
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if consumed := args[:len(args)-len(rest)]; len(consumed) > 0 && consumed[len(consumed)-1] == "--" {
			positional = append(positional, rest...) // after "--", no flags
			break
		}
		positional, args = append(positional, rest[0]), rest[1:]
	}
	if len(positional) > max {
		fmt.Fprintf(fs.Output(), "unexpected arguments: %s\n", strings.Join(positional[max:], " "))
		fs.Usage()
		return nil, ErrUsage
	}
	return positional, nil
}

// usageOf is fs's usage as a helpError.
func usageOf(fs *flag.FlagSet) error {
	var b bytes.Buffer
	out := fs.Output()
	fs.SetOutput(&b)
	fs.Usage()
	fs.SetOutput(out)
	return &helpError{usage: b.Bytes()}
}

// missing reports a command line that lacks what the command needs, with usage.
func missing(env Env, fs *flag.FlagSet, what string) error {
	fmt.Fprintf(env.Stderr, "%s: %s\n", fs.Name(), what)
	fs.Usage()
	return ErrUsage
}
