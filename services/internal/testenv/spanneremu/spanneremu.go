// Package spanneremu runs tests against the official Cloud Spanner emulator.
//
// A test package starts one emulator for all its tests from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(spanneremu.Main(m)) }
//
// and each test takes a fresh database holding the embedded schema:
//
//	db := spanneremu.NewDatabase(t)
//
// Main starts the emulator itself: gateway_main from the Google Cloud SDK
// (found with `gcloud info`, or in $SPANNER_EMULATOR_DIR), on free loopback
// ports, in its own process group that is killed when the tests end. If
// SPANNER_EMULATOR_HOST is already set, that emulator is used instead and
// left running. If no emulator can be started or reached, Main fails the
// package: a Spanner test never skips silently.
package spanneremu

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"cloud.google.com/go/spanner"
	database "cloud.google.com/go/spanner/admin/database/apiv1"
	"cloud.google.com/go/spanner/admin/database/apiv1/databasepb"
	instance "cloud.google.com/go/spanner/admin/instance/apiv1"
	"cloud.google.com/go/spanner/admin/instance/apiv1/instancepb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tbhub/tbhub/services/internal/storage/store/spannerstore"
)

const (
	project    = "tbhub-test"
	instanceID = "test"
	// startTimeout bounds how long the emulator may take to answer while
	// its process lives (an exit fails at once). Generous: a slow start
	// on a busy 2-core machine is not what any test checks.
	startTimeout = 5 * time.Minute
)

// Emulator is a running (or borrowed) emulator with one test instance.
type Emulator struct {
	// Host is the gRPC address, as SPANNER_EMULATOR_HOST holds it.
	Host string
	// Instance is "projects/tbhub-test/instances/test".
	Instance string

	cmd      *exec.Cmd // nil when borrowed
	lifeline *os.File  // write end of the supervisor's lifeline pipe
	exited   chan struct{}
	logPath  string
	admin    *database.DatabaseAdminClient
	seq      atomic.Int64
}

// current is the emulator Main started for this test binary.
var current *Emulator

// onDemand is MainOnDemand's: the emulator starts at the first
// NewDatabase (startOnce), or never.
var (
	onDemand  bool
	startOnce sync.Once
	startErr  error
)

// Main starts (or borrows) an emulator, runs the tests and stops it. It
// returns the exit code for os.Exit; 1 if the emulator is unavailable.
//
// With -short (scripts/test.sh -short) no emulator is started and every
// test that asks for a database skips: the emulator is the slow tier.
func Main(m *testing.M) int {
	if !flag.Parsed() {
		flag.Parse()
	}
	if testing.Short() {
		return m.Run()
	}
	ctx := context.Background()
	e, err := Start(ctx)
	if err != nil {
		fmt.Fprintf(os.Stderr, "spanneremu: %v\n", err)
		return 1
	}
	defer e.Stop()
	current = e
	return m.Run()
}

// MainOnDemand is Main for a package whose emulator tests are few beside
// many others: the emulator starts at the first NewDatabase, so a run of
// the other tests (-run) starts none.
func MainOnDemand(m *testing.M) int {
	if !flag.Parsed() {
		flag.Parse()
	}
	onDemand = true
	code := m.Run()
	if current != nil {
		current.Stop()
	}
	return code
}

// Start starts an emulator, or borrows the one named by
// SPANNER_EMULATOR_HOST, and creates the test instance. On success
// SPANNER_EMULATOR_HOST names it, so every client library in the process
// talks to it.
func Start(ctx context.Context) (*Emulator, error) {
	e := &Emulator{Instance: "projects/" + project + "/instances/" + instanceID}
	if host := os.Getenv("SPANNER_EMULATOR_HOST"); host != "" {
		e.Host = host
	} else if err := e.launch(); err != nil {
		return nil, err
	}
	if err := e.waitAndCreateInstance(ctx); err != nil {
		e.Stop()
		return nil, err
	}
	admin, err := database.NewDatabaseAdminClient(ctx)
	if err != nil {
		e.Stop()
		return nil, fmt.Errorf("database admin client: %w", err)
	}
	e.admin = admin
	return e, nil
}

// emulatorDir finds the directory holding gateway_main and emulator_main.
func emulatorDir() (string, error) {
	if dir := os.Getenv("SPANNER_EMULATOR_DIR"); dir != "" {
		return dir, nil
	}
	out, err := exec.Command("gcloud", "info", "--format=value(installation.sdk_root)").Output()
	if err != nil {
		return "", fmt.Errorf("finding the Cloud SDK with `gcloud info` (install the Google Cloud SDK with the cloud-spanner-emulator component, set SPANNER_EMULATOR_DIR, or set SPANNER_EMULATOR_HOST): %w", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "bin", "cloud_spanner_emulator"), nil
}

// freePort asks the kernel for an unused loopback port. Another process
// could take it before the emulator binds it; the emulator then fails to
// start and Start reports it.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (e *Emulator) launch() error {
	dir, err := emulatorDir()
	if err != nil {
		return err
	}
	gateway := filepath.Join(dir, "gateway_main")
	if _, err := os.Stat(gateway); err != nil {
		return fmt.Errorf("no emulator at %s (gcloud components install cloud-spanner-emulator): %w", dir, err)
	}
	grpcPort, err := freePort()
	if err != nil {
		return err
	}
	httpPort, err := freePort()
	if err != nil {
		return err
	}
	for httpPort == grpcPort {
		if httpPort, err = freePort(); err != nil {
			return err
		}
	}
	logf, err := os.CreateTemp("", "spanner-emulator-*.log")
	if err != nil {
		return err
	}
	defer logf.Close()
	e.logPath = logf.Name()
	// The gateway starts emulator_main as its own child, and killing the
	// gateway does not stop that child. So both run under a small shell in
	// a process group of their own: Stop kills the group, the shell kills
	// the group when the gateway exits, and it kills the group when this
	// process dies without calling Stop (a test timeout, SIGKILL) because
	// the lifeline pipe on its fd 3 then reaches EOF.
	lifeR, lifeW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer lifeR.Close()
	const supervisor = `"$@" </dev/null &
gateway=$!
( read -r _ <&3; kill -9 0 ) &
wait "$gateway"
kill -9 0`
	e.cmd = exec.Command("/bin/sh", "-c", supervisor, "sh", gateway,
		"--hostname", "127.0.0.1",
		"--grpc_port", strconv.Itoa(grpcPort),
		"--http_port", strconv.Itoa(httpPort),
		"--grpc_binary", filepath.Join(dir, "emulator_main"),
		// One database per test; the default cap (100) is below what a
		// parallel suite can hold at once.
		"--override_max_databases_per_instance", "10000",
	)
	e.cmd.Stdout = logf
	e.cmd.Stderr = logf
	e.cmd.ExtraFiles = []*os.File{lifeR}
	e.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := e.cmd.Start(); err != nil {
		lifeW.Close()
		return fmt.Errorf("starting %s: %w", gateway, err)
	}
	// lifeW stays open, unwritten, for the life of the process.
	e.lifeline = lifeW
	e.exited = make(chan struct{})
	go func() {
		_ = e.cmd.Wait()
		close(e.exited)
	}()
	e.Host = fmt.Sprintf("127.0.0.1:%d", grpcPort)
	os.Setenv("SPANNER_EMULATOR_HOST", e.Host)
	return nil
}

// logTail returns the end of the emulator's log, for error messages.
func (e *Emulator) logTail() string {
	if e.logPath == "" {
		return ""
	}
	b, _ := os.ReadFile(e.logPath)
	b = bytes.TrimSpace(b)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return "\nemulator log (" + e.logPath + "):\n" + string(b)
}

// waitAndCreateInstance creates the test instance, retrying while the
// emulator is still coming up.
func (e *Emulator) waitAndCreateInstance(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	admin, err := instance.NewInstanceAdminClient(ctx)
	if err != nil {
		return fmt.Errorf("instance admin client: %w", err)
	}
	defer admin.Close()
	var lastErr error
	for {
		if e.exited != nil {
			select {
			case <-e.exited:
				return fmt.Errorf("emulator exited during startup: %v%s", e.cmd.ProcessState, e.logTail())
			default:
			}
		}
		op, err := admin.CreateInstance(ctx, &instancepb.CreateInstanceRequest{
			Parent:     "projects/" + project,
			InstanceId: instanceID,
			Instance: &instancepb.Instance{
				Config:      "projects/" + project + "/instanceConfigs/emulator-config",
				DisplayName: "tbhub tests",
				NodeCount:   1,
			},
		})
		if err == nil {
			_, err = op.Wait(ctx)
		}
		if err == nil || status.Code(err) == codes.AlreadyExists {
			return nil
		}
		lastErr = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("emulator at %s not ready after %v: %v%s", e.Host, startTimeout, lastErr, e.logTail())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Stop closes the admin client and, if Start launched the emulator, kills
// its process group and takes it out of SPANNER_EMULATOR_HOST.
func (e *Emulator) Stop() {
	if e.admin != nil {
		e.admin.Close()
	}
	if e.cmd != nil && e.cmd.Process != nil {
		_ = syscall.Kill(-e.cmd.Process.Pid, syscall.SIGKILL)
		<-e.exited
		e.lifeline.Close()
		os.Remove(e.logPath)
		// Start named this emulator in the environment; a later Start in
		// the same process must launch its own, not borrow a dead one.
		if os.Getenv("SPANNER_EMULATOR_HOST") == e.Host {
			os.Unsetenv("SPANNER_EMULATOR_HOST")
		}
	}
}

// Database is one fresh database with the schema applied.
type Database struct {
	// Name is "projects/…/instances/…/databases/…".
	Name   string
	Client *spanner.Client
	Admin  *database.DatabaseAdminClient
}

// SkipIfShort skips tb under -short, which leaves out the emulator tier.
func SkipIfShort(tb testing.TB) {
	tb.Helper()
	if testing.Short() {
		tb.Skip("-short: the Cloud Spanner emulator tier is skipped")
	}
}

// NewDatabase creates a database in the emulator Main started (or
// MainOnDemand starts now), applies the embedded schema with
// spannerstore.Migrate, and drops it when tb ends. It fails tb if neither
// is the package's TestMain.
func NewDatabase(tb testing.TB) *Database {
	tb.Helper()
	SkipIfShort(tb)
	if onDemand {
		startOnce.Do(func() { current, startErr = Start(context.Background()) })
		if startErr != nil {
			tb.Fatalf("spanneremu: %v", startErr)
		}
	}
	if current == nil {
		tb.Fatal("spanneremu: no emulator; the package's TestMain must call spanneremu.Main")
	}
	db, err := current.NewDatabase(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := db.Drop(context.Background()); err != nil {
			tb.Errorf("spanneremu: dropping %s: %v", db.Name, err)
		}
	})
	return db
}

// NewDatabase creates a uniquely named database holding the schema. The
// caller drops it with Drop.
func (e *Emulator) NewDatabase(ctx context.Context) (*Database, error) {
	var rnd [3]byte
	_, _ = rand.Read(rnd[:])
	id := fmt.Sprintf("t%d-%s", e.seq.Add(1), hex.EncodeToString(rnd[:]))
	op, err := e.admin.CreateDatabase(ctx, &databasepb.CreateDatabaseRequest{
		Parent:          e.Instance,
		CreateStatement: "CREATE DATABASE `" + id + "`",
	})
	if err != nil {
		return nil, fmt.Errorf("spanneremu: creating database %s: %w", id, err)
	}
	created, err := op.Wait(ctx)
	if err != nil {
		return nil, fmt.Errorf("spanneremu: creating database %s: %w", id, err)
	}
	db := &Database{Name: created.Name, Admin: e.admin}
	if err := spannerstore.Migrate(ctx, e.admin, db.Name); err != nil {
		_ = db.Drop(ctx)
		return nil, fmt.Errorf("spanneremu: %w", err)
	}
	db.Client, err = spanner.NewClient(ctx, db.Name)
	if err != nil {
		_ = db.Drop(ctx)
		return nil, fmt.Errorf("spanneremu: client for %s: %w", db.Name, err)
	}
	return db, nil
}

// Sessions is how many clients ConcurrentStore gives a store: how many of
// its calls run at once.
const Sessions = 4

// Store returns a store on db as a server process runs it on the emulator
// (backend.emulatorSessions): one call at a time. The emulator keeps one
// read-write transaction at a time and can stay stuck behind one that a
// client abandoned (GoogleCloudPlatform/cloud-spanner-emulator#137); whole
// uploads under many concurrent calls hung CI that way (a strong read
// never answered). The store's concurrent path is tested by the
// conformance suite through ConcurrentStore.
func (db *Database) Store(tb testing.TB) *spannerstore.Store {
	tb.Helper()
	return db.store(tb, 1)
}

// ConcurrentStore returns a store on db that runs Sessions calls at once,
// each alone on its own client, so that conflicting transactions abort and
// retry as on Cloud Spanner (see spannerstore.Options.SessionClients). The
// extra clients close when tb ends.
func (db *Database) ConcurrentStore(tb testing.TB) *spannerstore.Store {
	tb.Helper()
	return db.store(tb, Sessions)
}

func (db *Database) store(tb testing.TB, sessions int) *spannerstore.Store {
	tb.Helper()
	clients := make([]*spanner.Client, sessions-1)
	for i := range clients {
		c, err := spanner.NewClient(context.Background(), db.Name)
		if err != nil {
			tb.Fatalf("spanneremu: client for %s: %v", db.Name, err)
		}
		tb.Cleanup(c.Close)
		clients[i] = c
	}
	return spannerstore.New(db.Client, spannerstore.Options{SessionClients: clients})
}

// Drop closes the client and drops the database.
func (db *Database) Drop(ctx context.Context) error {
	if db.Client != nil {
		db.Client.Close()
	}
	err := db.Admin.DropDatabase(ctx, &databasepb.DropDatabaseRequest{Database: db.Name})
	if status.Code(err) == codes.NotFound {
		return nil
	}
	return err
}
