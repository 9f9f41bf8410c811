package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	authv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/auth/v1"
	experimentsv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/experiments/v1"
)

// accountServer is a tbhub server as `tbup auth` and `tbup list` see it: it
// knows one token, "good", whose user owns one experiment named after the
// server (so a test can tell which server answered).
type accountServer struct {
	authv1.UnimplementedAuthServiceServer
	experimentsv1.UnimplementedExperimentServiceServer
	name string
}

func (s *accountServer) signedIn(ctx context.Context) error {
	md, _ := metadata.FromIncomingContext(ctx)
	for _, v := range md.Get("authorization") {
		if v == "Bearer good" {
			return nil
		}
	}
	return status.Error(codes.Unauthenticated, "unknown token")
}

func (s *accountServer) WhoAmI(ctx context.Context, _ *authv1.WhoAmIRequest) (*authv1.WhoAmIResponse, error) {
	if err := s.signedIn(ctx); err != nil {
		return nil, err
	}
	return &authv1.WhoAmIResponse{UserId: "u1", UserName: "ada"}, nil
}

func (s *accountServer) ListExperiments(ctx context.Context, _ *experimentsv1.ListExperimentsRequest) (*experimentsv1.ListExperimentsResponse, error) {
	if err := s.signedIn(ctx); err != nil {
		return nil, err
	}
	return &experimentsv1.ListExperimentsResponse{Experiments: []*experimentsv1.Experiment{{ExperimentId: "E", Name: "on-" + s.name}}}, nil
}

// start serves s and returns the server URL to pass as --server.
func (s *accountServer) start(t *testing.T) string {
	return serveGRPC(t, func(g *grpc.Server) {
		authv1.RegisterAuthServiceServer(g, s)
		experimentsv1.RegisterExperimentServiceServer(g, s)
	})
}

// tbupIn runs tbup with its configuration in configDir and the given
// environment besides; it returns stdout, stderr and the error.
func tbupIn(configDir string, environ map[string]string, args ...string) (string, string, error) {
	var out, errOut bytes.Buffer
	env := Env{Stdout: &out, Stderr: &errOut, Getenv: func(k string) string {
		if k == "TBUP_CONFIG_DIR" {
			return configDir
		}
		return environ[k]
	}}
	err := Run(context.Background(), env, args)
	return out.String(), errOut.String(), err
}

// tbup auth login --server URL remembers the server: later commands without
// --server or $TBUP_SERVER use it (not localhost:6006); the flag, then the
// environment, still come first; tbup auth logout forgets it.
func TestLoginRemembersServer(t *testing.T) {
	dir := t.TempDir()
	remembered := (&accountServer{name: "remembered"}).start(t)
	other := (&accountServer{name: "other"}).start(t)

	if _, errOut, err := tbupIn(dir, nil, "auth", "login", "--server", remembered, "--token", "good"); err != nil {
		t.Fatalf("auth login: %v\n%s", err, errOut)
	}
	for _, tc := range []struct {
		name    string
		environ map[string]string
		args    []string
		want    string
	}{
		{"remembered", nil, nil, "on-remembered"},
		{"flag first", map[string]string{"TBUP_SERVER": remembered}, []string{"--server", other, "--token", "good"}, "on-other"},
		{"environment before remembered", map[string]string{"TBUP_SERVER": other, "TBUP_TOKEN": "good"}, nil, "on-other"},
	} {
		out, errOut, err := tbupIn(dir, tc.environ, append([]string{"list"}, tc.args...)...)
		if err != nil || !strings.Contains(out, tc.want) {
			t.Errorf("%s: tbup list: %v; stdout %q, want it to list %q\n%s", tc.name, err, out, tc.want, errOut)
		}
	}
	if out, errOut, err := tbupIn(dir, nil, "auth", "whoami"); err != nil || !strings.Contains(out, "ada on "+remembered) {
		t.Errorf("auth whoami: %v; stdout %q\n%s", err, out, errOut)
	}

	if out, _, err := tbupIn(dir, nil, "auth", "logout"); err != nil || !strings.Contains(out, "Signed out of "+remembered) {
		t.Fatalf("auth logout: %v; stdout %q", err, out)
	}
	// Forgotten: back to the default server (asked without dialling it: a
	// tbhub may well be running at localhost:6006 beside this test).
	sf := serverFlags{token: "good"}
	if err := sf.resolve(context.Background(), Env{Getenv: func(k string) string {
		if k == "TBUP_CONFIG_DIR" {
			return dir
		}
		return ""
	}}); err != nil || sf.server != DefaultServer {
		t.Errorf("after logout the server is %q (%v), want %s", sf.server, err, DefaultServer)
	}
}
