package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	authv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/auth/v1"

	"github.com/tbhub/tbhub/uploader/internal/client"
)

// credentials are what tbup signed in with, per server: an API token, or an OpenID
// Connect sign-in (ID token + refresh token), and the server of the last sign-in,
// which commands use when not told another. The file is written with mode 0600 in
// a 0700 directory.
type credentials struct {
	Servers map[string]*serverCredential `json:"servers"`
	// Server is where the last 'tbup auth login' signed in, until 'tbup auth logout'.
	Server string `json:"server,omitempty"`
}

type serverCredential struct {
	Token string             `json:"token,omitempty"`
	OIDC  *client.Credential `json:"oidc,omitempty"`
}

// tokenFor returns the bearer token for server, refreshing (and saving) an expired
// OpenID Connect sign-in.
func (c *credentials) tokenFor(ctx context.Context, env Env, server string) (string, error) {
	sc := c.Servers[server]
	switch {
	case sc == nil:
		return "", nil
	case sc.Token != "":
		return sc.Token, nil
	case sc.OIDC != nil:
		fresh, changed, err := sc.OIDC.Fresh(ctx, http.DefaultClient)
		if err != nil {
			return "", err
		}
		if changed {
			sc.OIDC = fresh
			if err := saveCredentials(env, c); err != nil {
				return "", err
			}
		}
		return fresh.IDToken, nil
	}
	return "", nil
}

func credentialsPath(env Env) (string, error) {
	if d := env.Getenv("TBUP_CONFIG_DIR"); d != "" {
		return filepath.Join(d, "credentials.json"), nil
	}
	if d := env.Getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "tbup", "credentials.json"), nil
	}
	d, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "tbup", "credentials.json"), nil
}

func loadCredentials(env Env) (*credentials, error) {
	p, err := credentialsPath(env)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return &credentials{Servers: map[string]*serverCredential{}}, nil
	}
	if err != nil {
		return nil, err
	}
	var c credentials
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("credentials file %s is damaged: %v", p, err)
	}
	if c.Servers == nil {
		c.Servers = map[string]*serverCredential{}
	}
	return &c, nil
}

func saveCredentials(env Env, c *credentials) error {
	p, err := credentialsPath(env)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// authUsage lists tbup auth's subcommands.
const authUsage = `Usage: tbup auth <command> [--server URL] [--token T]

Commands:
  login            sign in: with --token T, store an API token; without, sign in with the
                   server's OpenID Connect issuer (device flow: open a URL anywhere, enter a code);
                   later commands use this server when given no --server or $TBUP_SERVER
  logout           forget the credentials stored for the server (and the server, if remembered)
  whoami           show who the credentials belong to
  display-name     show the name others see for you (the public gallery, your experiments);
                   --set NAME chooses it, --set "" goes back to your handle (user-...)

Run 'tbup auth <command> -h' for a command's flags.
`

func runAuth(ctx context.Context, env Env, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(env.Stderr, authUsage)
		return ErrUsage
	}
	sub, args := args[0], args[1:]
	if isHelp(sub) || sub == "help" {
		return &helpError{usage: []byte(authUsage)}
	}
	if sub != "login" && sub != "logout" && sub != "whoami" && sub != "display-name" {
		fmt.Fprintf(env.Stderr, "tbup auth: unknown command %q\n\n%s", sub, authUsage)
		return ErrUsage
	}
	synopsis := "[--server URL] [--token T]"
	if sub == "display-name" {
		synopsis = "[--set NAME] " + synopsis
	}
	fs := newFlagSet(env, "auth "+sub, synopsis)
	var sf serverFlags
	sf.register(fs)
	var newName *string
	if sub == "display-name" {
		newName = fs.String("set", "", "the display name to choose: at most 64 characters, letters, digits, spaces and . _ ' -; \"\" goes back to your handle")
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	setName := false
	fs.Visit(func(f *flag.Flag) { setName = setName || f.Name == "set" })
	switch sub {
	case "login":
		explicit := sf.token
		if err := sf.resolve(ctx, env); err != nil && explicit == "" {
			fmt.Fprintf(env.Stderr, "(ignoring stored credentials: %v)\n", err)
		}
		cred := &serverCredential{Token: explicit}
		if explicit == "" {
			oidc, err := deviceLogin(ctx, env, sf.server)
			if err != nil {
				return err
			}
			cred = &serverCredential{OIDC: oidc}
			sf.token = oidc.IDToken
		}
		who, err := whoAmI(ctx, env, &sf)
		if status.Code(err) == codes.Unauthenticated { // not "run 'tbup auth login'": that is what failed
			what := "sign-in"
			if explicit != "" {
				what = "token"
			}
			return fmt.Errorf("the server did not accept the %s (%s)", what, status.Convert(err).Message())
		}
		if err != nil {
			return errors.New(client.Describe(err))
		}
		creds, err := loadCredentials(env)
		if err != nil {
			return err
		}
		creds.Servers[sf.server] = cred
		creds.Server = sf.server
		if err := saveCredentials(env, creds); err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "Signed in to %s as %s.\n", sf.server, describeUser(who))
		return nil
	case "logout":
		_ = sf.resolve(ctx, env) // signing out needs no valid credentials
		creds, err := loadCredentials(env)
		if err != nil {
			return err
		}
		delete(creds.Servers, sf.server)
		if creds.Server == sf.server {
			creds.Server = ""
		}
		if err := saveCredentials(env, creds); err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "Signed out of %s.\n", sf.server)
		return nil
	case "whoami":
		who, err := whoAmI(ctx, env, &sf)
		if err != nil {
			return errors.New(client.Describe(err))
		}
		fmt.Fprintf(env.Stdout, "%s on %s; others see you as %q\n", describeUser(who), sf.server, who.GetDisplayName())
		return nil
	case "display-name":
		if !setName {
			who, err := whoAmI(ctx, env, &sf)
			if err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "Others see you as %q on %s.\n", who.GetDisplayName(), sf.server)
			return nil
		}
		c, err := sf.connect(ctx, env, nil)
		if err != nil {
			return err
		}
		defer c.conn.Close()
		resp, err := authv1.NewAuthServiceClient(c.conn).SetDisplayName(ctx, &authv1.SetDisplayNameRequest{DisplayName: *newName})
		if err != nil {
			return errors.New(client.Describe(err))
		}
		fmt.Fprintf(env.Stdout, "Others now see you as %q on %s.\n", resp.GetDisplayName(), sf.server)
		return nil
	}
	return fmt.Errorf("tbup auth %s: not handled", sub) // checked above
}

// describeUser names a user as people know it: its user name, with the
// email when that differs; the id only for a user with neither.
func describeUser(w *authv1.WhoAmIResponse) string {
	who := w.GetUserName()
	if who == "" {
		who = w.GetEmail()
	}
	if who == "" {
		return w.GetUserId()
	}
	if e := w.GetEmail(); e != "" && e != who {
		who += " <" + e + ">"
	}
	return who
}

// whoAmI asks the server who the credentials belong to. A refusal is the
// call's gRPC status, for the caller to describe.
func whoAmI(ctx context.Context, env Env, sf *serverFlags) (*authv1.WhoAmIResponse, error) {
	c, err := sf.connect(ctx, env, nil)
	if err != nil {
		return nil, err
	}
	defer c.conn.Close()
	return authv1.NewAuthServiceClient(c.conn).WhoAmI(ctx, &authv1.WhoAmIRequest{})
}

// deviceLogin signs in with the OpenID Connect issuer the server names, by the
// device authorization flow: the user opens a URL anywhere and enters a code.
func deviceLogin(ctx context.Context, env Env, server string) (*client.Credential, error) {
	cfg, err := client.FetchSignInConfig(ctx, http.DefaultClient, server)
	if errors.Is(err, client.ErrNoSignIn) {
		return nil, fmt.Errorf("%s accepts API tokens only: tbup auth login --token TOKEN (a token comes from 'tbhub token create' or the server's web page)", server)
	}
	if err != nil {
		return nil, err
	}
	return client.DeviceSignIn(ctx, http.DefaultClient, cfg, func(url, code string) {
		fmt.Fprintf(env.Stderr, "To sign in to %s, open\n\n  %s\n\nand enter the code %s. Waiting...\n", server, url, code)
	})
}
