package readpath_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tbhub/tbhub/frontend-api/httpapi/golden"
	"github.com/tbhub/tbhub/services/allinone/readpath"
	"github.com/tbhub/tbhub/services/internal/api/reader"
	"github.com/tbhub/tbhub/services/internal/assembly/serve"
	"github.com/tbhub/tbhub/services/internal/policy/auth"
	"github.com/tbhub/tbhub/services/internal/policy/limits"
	"github.com/tbhub/tbhub/services/internal/storage/blob"
	"github.com/tbhub/tbhub/services/internal/storage/blob/fileblob"
	"github.com/tbhub/tbhub/services/internal/storage/store"
	"github.com/tbhub/tbhub/services/internal/storage/store/sqlitestore"
	"github.com/tbhub/tbhub/services/internal/testenv/corpus"
	"github.com/tbhub/tbhub/services/internal/testenv/spanneremu"
)

var tbupBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "readpath")
	if err == nil {
		tbupBin, err = corpus.BuildTbup(dir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if emu != nil {
		emu.Stop()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// server is tbhub serve with the read path mounted, as `tbhub serve` runs
// it.
type server struct {
	url   string
	token string // the owner's full-scope token
	st    store.Store
	blobs blob.Store
	srv   *serve.Server
	http  *http.Client
	// rec is the HTTP API's connection to the services, recording while
	// TestGoldenShapes -update records (package golden).
	rec *golden.Recorder
}

func startServer(t testing.TB) *server {
	return startServerWith(t, readpath.Config{})
}

// startServerWith is startServer with the read path configured by cfg
// (a fresh blob-key secret is filled in).
func startServerWith(t testing.TB, cfg readpath.Config) *server {
	t.Helper()
	st, blobs := openEmbedded(t)
	return startOn(t, st, blobs, cfg)
}

// openEmbedded opens a fresh SQLite store and blob folder, closed when
// the test ends.
func openEmbedded(t testing.TB) (store.Store, blob.Store) {
	t.Helper()
	dir := t.TempDir()
	st, err := sqlitestore.Open(context.Background(), filepath.Join(dir, sqlitestore.DefaultFile), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	blobs, err := fileblob.Open(filepath.Join(dir, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		st.Close()
		blobs.Close()
	})
	return st, blobs
}

// startOn serves st and blobs; they are closed by the caller.
func startOn(t testing.TB, st store.Store, blobs blob.Store, cfg readpath.Config) *server {
	t.Helper()
	ctx := context.Background()
	lim := limits.Default()
	lim.RequestsPerSecond = 0
	// The tenancy tests send many invalid credentials from one address;
	// the throttle is tested in packages serve and tbhubcmd.
	lim.BadCredentials.PerSecond = 0
	scfg := serve.Config{HTTPAddr: "127.0.0.1:0", Limits: lim, SweepInterval: -1}
	if o := cfg.SignIn; o != nil { // the write service accepts the web client's ID tokens
		scfg.OIDC = auth.OIDCConfig{Issuer: o.Issuer, ClientIDs: []string{o.ClientID}}
	}
	srv, err := serve.New(st, blobs, scfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Reader.BlobKeySecret = reader.RandomSecret()
	conn, err := grpc.NewClient(srv.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(256<<20)))
	if err != nil {
		t.Fatal(err)
	}
	rec := golden.NewRecorder(conn)
	if _, _, err := readpath.Mount(srv.GRPCServer(), srv.Mux(), rec, st, blobs, cfg); err != nil {
		t.Fatal(err)
	}
	token, err := serve.IssueUserToken(ctx, st, srv.Authenticator(), "researcher", "readpath")
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(runCtx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		conn.Close()
	})
	return &server{url: srv.Origin(), token: token, st: st, blobs: blobs, srv: srv, http: &http.Client{}, rec: rec}
}

// upload runs tbup upload --one-shot on logdir and returns the experiment.
func (s *server) upload(t testing.TB, logdir string) string {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(tbupBin, "upload", "--one-shot", "--json", "--logdir", logdir, "--name", "corpus")
	cmd.Env = append(os.Environ(), "TBUP_SERVER="+s.url, "TBUP_TOKEN="+s.token,
		"TBUP_STATE_DIR="+filepath.Join(home, "state"), "TBUP_CONFIG_DIR="+filepath.Join(home, "config"))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("tbup upload: %v\n%s\n%s", err, out.String(), errOut.String())
	}
	var summary struct {
		ExperimentID string `json:"experiment_id"`
	}
	if err := json.Unmarshal(out.Bytes(), &summary); err != nil || summary.ExperimentID == "" {
		t.Fatalf("tbup --json printed %q: %v", out.String(), err)
	}
	return summary.ExperimentID
}

// response is one HTTP answer, decompressed.
type response struct {
	status int
	header http.Header
	body   []byte
}

// do sends a request with the given bearer token ("" for none), asking for
// gzip as browsers do.
func (s *server) do(t testing.TB, method, path, token string, form url.Values) response {
	t.Helper()
	if form != nil {
		return s.doBody(t, method, path, token, "application/x-www-form-urlencoded", form.Encode())
	}
	return s.doBody(t, method, path, token, "", "")
}

// doBody is do with a body of the given content type ("" for none).
func (s *server) doBody(t testing.TB, method, path, token, contentType, body string) response {
	t.Helper()
	var in io.Reader
	if contentType != "" {
		in = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.url+path, in)
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept-Encoding", "gzip")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r io.Reader = resp.Body
	if resp.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		r = gz
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("%s %s: reading: %v", method, path, err)
	}
	return response{resp.StatusCode, resp.Header, b}
}

// getJSON GETs path as the owner and decodes the JSON answer into v,
// failing the test unless the status is 200.
func (s *server) getJSON(t testing.TB, path string, v any) {
	t.Helper()
	r := s.do(t, http.MethodGet, path, s.token, nil)
	if r.status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, r.status, r.body)
	}
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("GET %s: %v in %.300s", path, err, r.body)
	}
}

// uploaded is the corpus uploaded once into one server per backend, for
// the whole package.
type uploaded struct {
	once sync.Once
	srv  *server
	eid  string
}

var (
	onEmbedded, onSpanner uploaded

	emuOnce sync.Once
	emu     *spanneremu.Emulator
	emuErr  error
)

// get starts the server with open and uploads ../shared/corpus, once.
func (u *uploaded) get(t *testing.T, open func(tb testing.TB) *server) (*server, string) {
	u.once.Do(func() {
		// The server outlives the first test: it is closed when the process
		// ends, with the temporary directory TestMain removes.
		tb := &keepAlive{T: t}
		u.srv = open(tb)
		u.eid = u.srv.upload(tb, corpus.Dir(t))
	})
	if u.srv == nil {
		t.Fatal("the corpus server failed to start in an earlier test")
	}
	return u.srv, u.eid
}

// onBackends runs check on the corpus uploaded into the embedded store
// and into Cloud Spanner (the emulator, started by the first test that
// needs it; a test fails, never skips, if it cannot start).
func onBackends(t *testing.T, check func(t *testing.T, s *server, eid string)) {
	t.Run("embedded", func(t *testing.T) {
		s, eid := onEmbedded.get(t, startServer)
		check(t, s, eid)
	})
	t.Run("spanner", func(t *testing.T) {
		spanneremu.SkipIfShort(t)
		s, eid := onSpanner.get(t, func(tb testing.TB) *server { return startOnSpanner(tb, readpath.Config{}) })
		check(t, s, eid)
	})
}

// startOnSpanner starts a server with cfg on a fresh database of the
// emulator (started by the first test that needs it) and a blob folder.
func startOnSpanner(tb testing.TB, cfg readpath.Config) *server {
	tb.Helper()
	emuOnce.Do(func() { emu, emuErr = spanneremu.Start(context.Background()) })
	if emuErr != nil {
		tb.Fatalf("Spanner emulator: %v", emuErr)
	}
	db, err := emu.NewDatabase(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	blobs, err := fileblob.Open(filepath.Join(tb.TempDir(), "blobs"))
	if err != nil {
		tb.Fatal(err)
	}
	return startOn(tb, db.Store(tb), blobs, cfg)
}

// keepAlive is a testing.TB whose cleanups never run and whose temporary
// directories outlive the test, for a fixture shared by the package.
type keepAlive struct {
	*testing.T
}

func (k *keepAlive) Cleanup(func()) {}

func (k *keepAlive) TempDir() string {
	d, err := os.MkdirTemp(filepath.Dir(tbupBin), "fixture")
	if err != nil {
		k.Fatal(err)
	}
	return d
}
