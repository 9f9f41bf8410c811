// Package configtest checks, in a server binary's tests, that it answers
// -h and --help as every tbhub binary does (package config).
package configtest

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/tbhub/tbhub/services/serverkit/config"
)

// CheckHelp checks that the command name, parsing args with parse, answers
// -h, -help and --help (also after other flags) with flag.ErrHelp and its
// usage once on stdout, listing every flag of all with its variable, and
// nothing on stderr; and that a flag it does not know is an error reported
// on stderr.
func CheckHelp(t *testing.T, name string, all *flag.FlagSet, parse func(args []string, stdout, stderr io.Writer) error) {
	t.Helper()
	for _, args := range [][]string{{"-h"}, {"-help"}, {"--help"}, {"--addr", ":1", "--help"}} {
		cmd := name + " " + strings.Join(args, " ")
		var out, errOut bytes.Buffer
		if err := parse(args, &out, &errOut); !errors.Is(err, flag.ErrHelp) {
			t.Errorf("%s: %v, want flag.ErrHelp", cmd, err)
		}
		if errOut.Len() > 0 {
			t.Errorf("%s: stderr = %q, want nothing", cmd, errOut.String())
		}
		if !strings.HasPrefix(out.String(), "Usage: "+name+" [flags]") || strings.Count(out.String(), "Usage") != 1 {
			t.Errorf("%s printed:\n%s", cmd, out.String())
		}
		for _, nv := range config.Names(all) {
			if !strings.Contains(out.String(), "  -"+nv[0]) || !strings.Contains(out.String(), "$"+nv[1]) {
				t.Errorf("%s does not list --%s ($%s):\n%s", cmd, nv[0], nv[1], out.String())
			}
		}
	}
	var errOut bytes.Buffer
	if err := parse([]string{"--nope"}, io.Discard, &errOut); err == nil || errors.Is(err, flag.ErrHelp) || !strings.Contains(errOut.String(), "nope") {
		t.Errorf("%s --nope: %v, stderr %q; want a usage error on stderr", name, err, errOut.String())
	}
}
