package readservice

import (
	"flag"
	"io"
	"testing"

	"github.com/tbhub/tbhub/services/serverkit/config"
	"github.com/tbhub/tbhub/services/serverkit/config/configtest"
)

// read-service -h and --help print the usage with every flag and its
// variable on stdout and end without serving; --nope is a usage error.
func TestHelp(t *testing.T) {
	all := flag.NewFlagSet("all", flag.ContinueOnError)
	NewFlags(all)
	configtest.CheckHelp(t, "read-service", all, func(args []string, stdout, stderr io.Writer) error {
		_, _, err := parseFlags(args, config.MapEnv(nil), stdout, stderr)
		return err
	})
}
