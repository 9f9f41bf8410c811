package config

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"
)

func newFlags(out *bytes.Buffer) (*flag.FlagSet, *string, *string, *int) {
	fs := flag.NewFlagSet("svc", flag.ContinueOnError)
	fs.SetOutput(out)
	addr := fs.String("addr", "localhost:6006", "listen address")
	read := fs.String("read-service", "", "read service")
	n := fs.Int("max-things", 3, "a number")
	return fs, addr, read, n
}

func TestPrecedence(t *testing.T) {
	for _, tc := range []struct {
		name     string
		env      map[string]string
		args     []string
		addr     string
		read     string
		warnings int
	}{
		{"defaults", nil, nil, "localhost:6006", "", 0},
		{"PORT", map[string]string{"PORT": "8080"}, nil, ":8080", "", 0},
		{"TBHUB_ADDR beats PORT", map[string]string{"PORT": "8080", "TBHUB_ADDR": "127.0.0.1:1"}, nil, "127.0.0.1:1", "", 0},
		{"flag beats all", map[string]string{"PORT": "8080", "TBHUB_ADDR": "127.0.0.1:1"}, []string{"--addr", ":2"}, ":2", "", 0},
		{"old name works, warns", map[string]string{"READ_SERVICE": "r:1"}, nil, "localhost:6006", "r:1", 1},
		{"new name beats old", map[string]string{"READ_SERVICE": "r:1", "TBHUB_READ_SERVICE": "r:2"}, nil, "localhost:6006", "r:2", 1},
		{"flag beats old name", map[string]string{"READ_SERVICE": "r:1"}, []string{"--read-service", "r:3"}, "localhost:6006", "r:3", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			fs, addr, read, _ := newFlags(&out)
			if err := Parse(fs, tc.args, MapEnv(tc.env), Port("addr"), Renamed("READ_SERVICE", "read-service")); err != nil {
				t.Fatal(err)
			}
			if *addr != tc.addr || *read != tc.read {
				t.Errorf("addr %q read %q, want %q %q", *addr, *read, tc.addr, tc.read)
			}
			if got := strings.Count(out.String(), "deprecated"); got != tc.warnings {
				t.Errorf("%d warnings, want %d: %s", got, tc.warnings, out.String())
			}
			if tc.warnings > 0 && !strings.Contains(out.String(), "TBHUB_READ_SERVICE") {
				t.Errorf("the warning does not name the new variable: %s", out.String())
			}
		})
	}
}

func TestBadValuesNameTheirVariable(t *testing.T) {
	var out bytes.Buffer
	fs, _, _, _ := newFlags(&out)
	err := Parse(fs, nil, MapEnv(map[string]string{"TBHUB_MAX_THINGS": "many"}))
	if err == nil || !strings.Contains(err.Error(), "TBHUB_MAX_THINGS") {
		t.Errorf("TBHUB_MAX_THINGS=many: %v", err)
	}
	fs, _, _, _ = newFlags(&out)
	if err := Parse(fs, []string{"extra"}, MapEnv(nil)); err == nil {
		t.Error("a positional argument was accepted")
	}
	fs, _, _, _ = newFlags(&out)
	if err := Parse(fs, nil, MapEnv(nil), Alias{Var: "X", Flag: "no-such-flag"}); err == nil {
		t.Error("an alias of a missing flag was accepted")
	}
}

func TestUsageNamesTheVariable(t *testing.T) {
	var out bytes.Buffer
	fs, _, _, _ := newFlags(&out)
	if err := Parse(fs, nil, MapEnv(nil)); err != nil {
		t.Fatal(err)
	}
	fs.PrintDefaults()
	for _, v := range []string{"$TBHUB_ADDR", "$TBHUB_READ_SERVICE", "$TBHUB_MAX_THINGS"} {
		if !strings.Contains(out.String(), v) {
			t.Errorf("help does not mention %s:\n%s", v, out.String())
		}
	}
	want := [][2]string{{"addr", "TBHUB_ADDR"}, {"max-things", "TBHUB_MAX_THINGS"}, {"read-service", "TBHUB_READ_SERVICE"}}
	got := Names(fs)
	if len(got) != len(want) {
		t.Fatalf("Names = %q", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("Names[%d] = %q, want %q", i, got[i], want[i])
		}
	}
}

func TestPortFlag(t *testing.T) {
	var out bytes.Buffer
	fs, addr, _, _ := newFlags(&out)
	PortFlag(fs, "addr")
	if err := Parse(fs, []string{"--port", "9"}, MapEnv(map[string]string{"PORT": "8080"}), Port("addr")); err != nil {
		t.Fatal(err)
	}
	if *addr != ":9" || !strings.Contains(out.String(), "--port is deprecated") {
		t.Errorf("--port 9: addr %q, output %q", *addr, out.String())
	}
}

// Asked for usage (-h, -help, --help, anywhere before "--"), Parse returns
// flag.ErrHelp having printed nothing, even with a bad environment value,
// and PrintUsage writes the usage, every flag with its variable, where told.
func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"-help"}, {"--help"}, {"--addr", ":1", "--help"}} {
		var out bytes.Buffer
		fs, _, _, _ := newFlags(&out)
		SetUsage(fs, "svc [flags]\n\nDoes things.")
		err := Parse(fs, args, MapEnv(map[string]string{"TBHUB_MAX_THINGS": "many"}))
		if !errors.Is(err, flag.ErrHelp) {
			t.Errorf("Parse(%q) = %v, want flag.ErrHelp", args, err)
		}
		if out.Len() > 0 {
			t.Errorf("Parse(%q) printed %q", args, out.String())
		}
		var usage bytes.Buffer
		PrintUsage(fs, &usage)
		for _, want := range []string{"Usage: svc [flags]\n\nDoes things.\n\nFlags:\n", "-addr", "$TBHUB_ADDR", "-max-things", "-read-service"} {
			if !strings.Contains(usage.String(), want) {
				t.Errorf("usage lacks %q:\n%s", want, usage.String())
			}
		}
		if fs.Output() != &out {
			t.Error("PrintUsage left the flag set's output changed")
		}
	}
	var out bytes.Buffer
	fs, _, _, _ := newFlags(&out)
	if err := Parse(fs, []string{"--", "-h"}, MapEnv(nil)); errors.Is(err, flag.ErrHelp) {
		t.Error("-h after -- asked for help")
	}
}

// Bind defines each setting with the field's value as its default, and
// the flags, their variables and the command line set the fields.
func TestBind(t *testing.T) {
	v := struct {
		n       int
		n64     int64
		ratio   float64
		name    string
		on      bool
		wait    time.Duration
		checked string
	}{n: 1, n64: 2, ratio: 0.5, name: "a", wait: time.Second}
	fs := flag.NewFlagSet("svc", flag.ContinueOnError)
	Bind(fs,
		Setting{Name: "n", Usage: "an int", Value: &v.n},
		Setting{Name: "n64", Usage: "an int64", Value: &v.n64},
		Setting{Name: "ratio", Usage: "a float", Value: &v.ratio},
		Setting{Name: "name", Usage: "a string", Value: &v.name},
		Setting{Name: "on", Usage: "a bool", Value: &v.on},
		Setting{Name: "wait", Usage: "a duration", Value: &v.wait},
		Setting{Name: "checked", Usage: "parsed by its package", Value: func(s string) error {
			if s == "bad" {
				return errors.New("not that")
			}
			v.checked = s
			return nil
		}},
	)
	var defaults []string
	fs.VisitAll(func(f *flag.Flag) { defaults = append(defaults, f.Name+"="+f.DefValue) })
	if got, want := strings.Join(defaults, " "), "checked= n=1 n64=2 name=a on=false ratio=0.5 wait=1s"; got != want {
		t.Errorf("defaults %s, want %s", got, want)
	}
	env := MapEnv(map[string]string{"TBHUB_N64": "64", "TBHUB_WAIT": "3m"})
	if err := Parse(fs, []string{"--n=7", "--ratio=0.25", "--name=b", "--on", "--checked=ok"}, env); err != nil {
		t.Fatal(err)
	}
	if v.n != 7 || v.n64 != 64 || v.ratio != 0.25 || v.name != "b" || !v.on || v.wait != 3*time.Minute || v.checked != "ok" {
		t.Errorf("parsed %+v", v)
	}
	if err := fs.Set("checked", "bad"); err == nil || v.checked != "ok" {
		t.Errorf("a value its func refuses: %v, field %q", err, v.checked)
	}
}

// A setting of a type Bind cannot define is a programming error, caught
// when the binary starts.
func TestBindUnknownType(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "--bytes") {
			t.Errorf("recovered %v, want a panic naming --bytes", r)
		}
	}()
	Bind(flag.NewFlagSet("svc", flag.ContinueOnError), Setting{Name: "bytes", Value: new(uint8)})
}
