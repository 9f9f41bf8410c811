package cli

import (
	"bytes"
	"context"
	"errors"
	"sort"
	"strings"
	"testing"

	authv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/auth/v1"
	experimentsv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/experiments/v1"
)

// Every command and subcommand answers -h and --help (anywhere among its
// arguments, and as `tbup help CMD`) with its usage, once, on stdout, and
// success, without running: no server is configured, so a command that ran
// would fail.
func TestHelpOfEveryCommand(t *testing.T) {
	type helpCase struct {
		args []string
		cmd  string // what the usage names
	}
	var cmds []string
	for n := range commands {
		if n != "auth" {
			cmds = append(cmds, n)
		}
	}
	sort.Strings(cmds)
	cmds = append(cmds, "auth", "auth login", "auth logout", "auth whoami", "auth display-name")
	var cases []helpCase
	for _, cmd := range cmds {
		words := strings.Fields(cmd)
		for _, h := range []string{"-h", "--help", "-help"} {
			cases = append(cases, helpCase{append(words[:len(words):len(words)], h), cmd})
		}
		cases = append(cases, helpCase{append([]string{"help"}, words...), cmd})
		if cmd != "auth" {
			// After other flags, even ones missing their required partners.
			cases = append(cases, helpCase{append(words[:len(words):len(words)], "--server", "http://127.0.0.1:1", "--help"), cmd})
		}
	}
	cases = append(cases, helpCase{[]string{"auth", "login", "--token", "T", "-h"}, "auth login"}, helpCase{[]string{"view", "EXPERIMENT", "--help"}, "view"})
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			env := Env{Stdout: &out, Stderr: &errOut, Getenv: func(string) string { return "" }}
			if err := Run(context.Background(), env, c.args); err != nil {
				t.Fatalf("tbup %s: %v (want success)\nstderr:\n%s", strings.Join(c.args, " "), err, errOut.String())
			}
			if errOut.Len() > 0 {
				t.Errorf("stderr = %q, want nothing", errOut.String())
			}
			want := "Usage: tbup " + c.cmd + " "
			if !strings.HasPrefix(out.String(), want) {
				t.Errorf("stdout does not start with %q:\n%s", want, out.String())
			}
			if n := strings.Count(out.String(), "Usage:"); n != 1 {
				t.Errorf("usage printed %d times:\n%s", n, out.String())
			}
		})
	}
}

// tbup -h and tbup --help list the commands on stdout and succeed; tbup
// alone prints them to stderr and is a usage error.
func TestTopLevelHelp(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"--help"}, {"help"}} {
		var out, errOut bytes.Buffer
		if err := Run(context.Background(), Env{Stdout: &out, Stderr: &errOut, Getenv: func(string) string { return "" }}, args); err != nil {
			t.Fatalf("tbup %s: %v", args[0], err)
		}
		for n := range commands {
			if !strings.Contains(out.String(), "  "+n+" ") {
				t.Errorf("tbup %s does not list %s:\n%s", args[0], n, out.String())
			}
		}
	}
	var out, errOut bytes.Buffer
	if err := Run(context.Background(), Env{Stdout: &out, Stderr: &errOut, Getenv: func(string) string { return "" }}, nil); !errors.Is(err, ErrUsage) {
		t.Errorf("tbup alone: %v, want ErrUsage", err)
	}
	if !strings.Contains(errOut.String(), "Commands:") {
		t.Errorf("tbup alone printed no commands to stderr: %q", errOut.String())
	}
}

// A command given a wrong flag is still a usage error (exit 2), usage on stderr.
func TestBadFlagIsUsageError(t *testing.T) {
	for _, args := range [][]string{{"list", "--nope"}, {"auth", "whoami", "--nope"}, {"auth", "nope"}, {"nope"}} {
		var out, errOut bytes.Buffer
		err := Run(context.Background(), Env{Stdout: &out, Stderr: &errOut, Getenv: func(string) string { return "" }}, args)
		if !errors.Is(err, ErrUsage) {
			t.Errorf("tbup %s: %v, want ErrUsage", strings.Join(args, " "), err)
		}
		if !strings.Contains(errOut.String(), "Usage:") {
			t.Errorf("tbup %s: no usage on stderr: %q", strings.Join(args, " "), errOut.String())
		}
	}
}

// tbup auth whoami and login name the user by its user name, not its id.
func TestDescribeUserByName(t *testing.T) {
	for _, tc := range []struct {
		who  *authv1.WhoAmIResponse
		want string
	}{
		{&authv1.WhoAmIResponse{UserId: "u_7f3a", UserName: "ada"}, "ada"},
		{&authv1.WhoAmIResponse{UserId: "u_7f3a", UserName: "ada", Email: "ada@example.com"}, "ada <ada@example.com>"},
		{&authv1.WhoAmIResponse{UserId: "u_7f3a", UserName: "ada@example.com", Email: "ada@example.com"}, "ada@example.com"},
		{&authv1.WhoAmIResponse{UserId: "u_7f3a", Email: "ada@example.com"}, "ada@example.com"},
		{&authv1.WhoAmIResponse{UserId: "u_7f3a"}, "u_7f3a"},
	} {
		if got := describeUser(tc.who); got != tc.want {
			t.Errorf("describeUser(%v) = %q, want %q", tc.who, got, tc.want)
		}
	}
}

// tbup list names an unnamed experiment by its ID, as the web UI does
// (`e.name || e.experimentId` in web/src/pages), and blanks control
// characters in a name.
func TestDisplayName(t *testing.T) {
	for _, tc := range []struct {
		e    *experimentsv1.Experiment
		want string
	}{
		{&experimentsv1.Experiment{ExperimentId: "9YkG-6KEr", Name: "mnist"}, "mnist"},
		{&experimentsv1.Experiment{ExperimentId: "9YkG-6KEr"}, "9YkG-6KEr"},
		{&experimentsv1.Experiment{ExperimentId: "9YkG-6KEr", Name: "a\tb\x1b[2J"}, "a b [2J"},
	} {
		if got := displayName(tc.e); got != tc.want {
			t.Errorf("displayName(%v) = %q, want %q", tc.e, got, tc.want)
		}
	}
}
