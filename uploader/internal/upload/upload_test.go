package upload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"

	"github.com/tbhub/tbhub/uploader/internal/client"
	"github.com/tbhub/tbhub/uploader/internal/logdir"
	"github.com/tbhub/tbhub/uploader/internal/state"
)

// testLimits are the default limits without pacing.
func testLimits() client.Limits {
	l := client.DefaultLimits
	l.MinScalarInterval, l.MinTensorInterval, l.MinBlobInterval = 0, 0, 0
	return l
}

var testRetry = client.Retry{Attempts: 4, Base: time.Millisecond, Max: 10 * time.Millisecond}

// stateChecker is a SaveState that checks, at every save, that the offsets saved
// cover only events the server holds: the state must never claim more than the
// server acknowledged, or a crash right after the save loses data.
type stateChecker struct {
	t     testing.TB
	logs  *memLogdir
	srv   *fakeServer
	mu    sync.Mutex
	saves int
	lost  []string // events a saved state covered that the server did not hold
}

func (c *stateChecker) save(s *state.State) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.saves++
	for run, r := range s.Runs {
		for name, f := range r.Files {
			for _, m := range c.logs.missing(c.srv, run, name, f.Offset) {
				c.lost = append(c.lost, fmt.Sprintf("save %d covers %s", c.saves, m))
			}
		}
	}
	return nil
}

func (c *stateChecker) check() {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.lost) > 0 {
		c.t.Errorf("the state recorded %d event(s) as sent that the server did not hold, e.g.:\n%s", len(c.lost), strings.Join(c.lost[:min(5, len(c.lost))], "\n"))
	}
}

func newConfig(src logdir.Source, w servicepb.TensorBoardWriterServiceClient, st *state.State, save func(*state.State) error) Config {
	return Config{
		Source: src, Writer: w, ExperimentID: "exp", Limits: testLimits(),
		Plugins: map[string]bool{"scalars": true, "images": true},
		State:   st, SaveState: save, OneShot: true, Retry: testRetry,
	}
}

// image returns n bytes that differ for every (seed, i).
func image(n, seed int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + seed*13 + i/251)
	}
	b[0], b[1] = byte(seed), byte(seed>>8)
	return b
}

// TestStateNeverCoversUnacknowledgedBlobs is the kill -9 blob loss of issue 12: many
// images in one file fill the blobs held back for last-write-wins, and a segment
// sealed while they were being submitted recorded the reader's position past the
// ones not yet submitted. Once the segment's own requests were acknowledged the
// state said the rest were sent; tbup killed then never sent them. Here one image
// is held by the server until every other request is done: no save may cover it.
func TestStateNeverCoversUnacknowledgedBlobs(t *testing.T) {
	logs := newMemLogdir()
	w := logs.file(t, "train", "events.out.tfevents.1")
	const steps, size, heldStep = 150, 300_000, 100
	for s := int64(0); s < steps; s++ {
		w.scalar("loss", s, float32(s))
		w.image("samples", s, image(size, int(s)))
	}
	srv, client := newFakeServer(t)
	release := make(chan struct{})
	srv.fault = func(c call) error {
		if c.tag == "samples" && c.step == heldStep && c.method == "WriteBlob" {
			<-release
		}
		return nil
	}
	chk := &stateChecker{t: t, logs: logs, srv: srv}
	st := state.New("fake", "memory")
	u := New(newConfig(logs, client, st, chk.save))
	done := make(chan error, 1)
	go func() { done <- u.Run(context.Background()) }()

	// Everything else reaches the server and is acknowledged.
	waitFor(t, "every other request to be acknowledged", func() bool {
		for s := int64(0); s < steps; s++ {
			if _, ok := srv.blobPoint("train", "samples", s); !ok && s != heldStep {
				return false
			}
		}
		return u.pendingRequests() == 1
	})
	chk.check()
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if m := logs.missing(srv, "train", "events.out.tfevents.1", 1<<62); len(m) > 0 {
		t.Errorf("after the upload the server lacks %d events: %v", len(m), m[:min(5, len(m))])
	}
	if off, end := st.Runs["train"].Files["events.out.tfevents.1"].Offset, int64(len(logs.files["train/events.out.tfevents.1"].data)); off != end {
		t.Errorf("the state ends at offset %d, the file at %d", off, end)
	}
	chk.check()
}

// waitFor polls cond until it holds; the test's deadline bounds it.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
			if dl, set := d.Deadline(); set && time.Until(dl) < 5*time.Second {
				t.Fatalf("gave up waiting for %s", what)
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// faultLogdir is two runs, each a file of scalars and images (two per step, of
// several chunks each with faultLimits) and a file of more scalars.
func faultLogdir(t *testing.T) *memLogdir {
	logs := newMemLogdir()
	for r, run := range []string{"eval", "train"} {
		w := logs.file(t, run, "events.out.tfevents.1")
		for s := int64(0); s < 30; s++ {
			w.scalar("loss", s, float32(s)/3)
			w.image("samples", s, image(70_000, r*1000+int(s)), image(5_000, r*1000+int(s)+500))
		}
		w2 := logs.file(t, run, "events.out.tfevents.2")
		for s := int64(0); s < 2000; s++ {
			w2.scalar("accuracy", s, float32(s)/2000)
		}
	}
	return logs
}

// checkDelivered fails the test unless the server holds every event of logs.
func checkDelivered(t *testing.T, logs *memLogdir, srv *fakeServer) {
	t.Helper()
	runs, _ := logs.Scan(context.Background())
	for _, r := range runs {
		for _, f := range r.Files {
			if m := logs.missing(srv, r.Name, f.Name, 1<<62); len(m) > 0 {
				t.Errorf("%s/%s: the server lacks %d events, e.g. %v", r.Name, f.Name, len(m), m[0])
			}
		}
	}
}

// uploadThroughFaults uploads logs to srv, retrying patiently, and checks that
// every save was covered by the server and that everything arrived.
func uploadThroughFaults(t *testing.T, logs *memLogdir, srv *fakeServer, client servicepb.TensorBoardWriterServiceClient) *Uploader {
	t.Helper()
	chk := &stateChecker{t: t, logs: logs, srv: srv}
	cfg := newConfig(logs, client, state.New("fake", "memory"), chk.save)
	cfg.Limits = faultLimits()
	cfg.Retry.Attempts = 20
	u := New(cfg)
	u.ledger.segmentBytes = 256 << 10
	if err := u.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	chk.check()
	checkDelivered(t, logs, srv)
	return u
}

// faultLimits make small requests and chunks, so that a run has many of each.
func faultLimits() client.Limits {
	l := testLimits()
	l.MaxScalarRequestSize = 4 << 10
	l.MaxBlobRequestSize = 32 << 10
	return l
}

// process is one run of tbup against the fake server: its own connection and
// state, and a crash hook that kills it at the Nth time it reaches a point.
type process struct {
	t     *testing.T
	conn  *grpc.ClientConn
	u     *Uploader
	done  chan error
	died  chan struct{} // closed when the process dies at its crash point
	limbo chan struct{} // where the dead process's goroutine waits until the test ends

	mu    sync.Mutex
	dead  bool
	saved []byte // the state file: the last state saved, as JSON
}

// startProcess runs an upload of logs from the state file saved (nil: a new one),
// to die at the nth time it reaches point ("" to run to the end).
func startProcess(t *testing.T, srv *fakeServer, logs *memLogdir, chk *stateChecker, saved []byte, point CrashPoint, n int64) *process {
	st := state.New("fake", "memory")
	if saved != nil {
		if err := json.Unmarshal(saved, st); err != nil {
			t.Fatal(err)
		}
	}
	client, conn := srv.connect(t)
	p := &process{t: t, conn: conn, done: make(chan error, 1), died: make(chan struct{}), limbo: make(chan struct{}), saved: saved}
	t.Cleanup(func() { close(p.limbo) })
	var hits atomic.Int64
	cfg := newConfig(logs, client, st, p.save(chk))
	cfg.Limits = faultLimits()
	cfg.Crash = func(c CrashPoint) {
		if c != point || hits.Add(1) != n {
			return
		}
		// kill -9: no further call reaches the server, nothing more is saved, and
		// this goroutine stops here.
		p.mu.Lock()
		p.dead = true
		p.mu.Unlock()
		conn.Close()
		close(p.died)
		<-p.limbo
	}
	p.u = New(cfg)
	p.u.ledger.segmentBytes = 256 << 10
	go func() { p.done <- p.u.Run(context.Background()) }()
	return p
}

func (p *process) save(chk *stateChecker) func(*state.State) error {
	return func(s *state.State) error {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.dead {
			return errors.New("the process is dead")
		}
		b, err := json.Marshal(s)
		if err != nil {
			return err
		}
		p.saved = b
		return chk.save(s)
	}
}

func (p *process) state() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.saved
}

// TestDyingAtAnyCrashPointLosesNothing: an upload dies at each crash point (the
// first, second and fifth time it is reached, or the first and second for a save); a new one started from the state
// file it left sends the rest. The state never covers data the server lacks, and
// in the end the server holds every point and every blob byte for byte.
func TestDyingAtAnyCrashPointLosesNothing(t *testing.T) {
	for _, point := range CrashPoints {
		ns := []int64{1, 2, 5}
		if point == CrashStateSaving || point == CrashStateSaved {
			ns = ns[:2] // a save per run's worth of blobs here
		}
		for _, n := range ns {
			t.Run(fmt.Sprintf("%s#%d", point, n), func(t *testing.T) {
				logs := faultLogdir(t)
				srv, _ := newFakeServer(t)
				chk := &stateChecker{t: t, logs: logs, srv: srv}
				first := startProcess(t, srv, logs, chk, nil, point, n)
				select {
				case <-first.died:
				case err := <-first.done:
					t.Fatalf("the upload ended (%v) without reaching %s %d times", err, point, n)
				}
				second := startProcess(t, srv, logs, chk, first.state(), "", 0)
				if err := <-second.done; err != nil {
					t.Fatal(err)
				}
				chk.check()
				checkDelivered(t, logs, srv)
			})
		}
	}
}

// TestSurvivesServerErrorsAndCutStreams: one call in four fails as a restarting
// server's do (UNAVAILABLE), and one WriteBlob stream in three is cut after its
// first chunk; the upload retries, resumes blobs from what the server holds, and
// delivers everything once.
func TestSurvivesServerErrorsAndCutStreams(t *testing.T) {
	logs := faultLogdir(t)
	srv, client := newFakeServer(t)
	var n, resumed atomic.Int64
	srv.fault = func(c call) error {
		i := n.Add(1)
		switch {
		case c.method == "WriteBlob" && c.first && c.offset > 0:
			resumed.Add(1)
		case c.method == "WriteBlob" && !c.first && c.offset > 0 && i%3 == 0:
			return status.Error(codes.Unavailable, "connection cut")
		case c.first || c.method != "WriteBlob":
			if i%4 == 0 {
				return status.Error(codes.Unavailable, "server restarting")
			}
		}
		return nil
	}
	u := uploadThroughFaults(t, logs, srv, client)
	if u.prog.Retries.Load() == 0 || resumed.Load() == 0 {
		t.Errorf("%d retries, %d blobs resumed mid-way: the faults did not bite", u.prog.Retries.Load(), resumed.Load())
	}
	if got := u.prog.Scalars.Load(); got != 2*(30+2000) {
		t.Errorf("%d scalars counted as sent, want %d: a retried request counted twice?", got, 2*(30+2000))
	}
}

// TestPermanentFailureKeepsStateBehind: the server refuses one image for good;
// the upload ends with ErrNotSent, and no state saved covers that image.
func TestPermanentFailureKeepsStateBehind(t *testing.T) {
	logs := faultLogdir(t)
	srv, client := newFakeServer(t)
	chk := &stateChecker{t: t, logs: logs, srv: srv}
	// The refused step is the first train blob asked for after a state was
	// saved, and every later try of it: the test needs a save before the
	// failure to show anything (step 17, fixed, came before any save on a
	// fast machine in a CI run).
	var mu sync.Mutex
	refused := int64(-1)
	srv.fault = func(c call) error {
		if c.run != "train" || c.method != "WriteBlob" {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		if refused < 0 {
			chk.mu.Lock()
			saved := chk.saves > 0
			chk.mu.Unlock()
			if saved {
				refused = c.step
			}
		}
		if c.step == refused {
			return status.Error(codes.PermissionDenied, "no")
		}
		return nil
	}
	cfg := newConfig(logs, client, state.New("fake", "memory"), chk.save)
	cfg.Limits = faultLimits()
	u := New(cfg)
	u.ledger.segmentBytes = 256 << 10
	err := u.Run(context.Background())
	if !errors.Is(err, ErrNotSent) || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("Run: %v, want ErrNotSent naming the refusal", err)
	}
	chk.check()
	if chk.saves == 0 {
		t.Error("nothing was saved before the failure: the test shows nothing")
	}
}

// TestSurvivesDroppedConnections: the network drops every connection now and
// then, in the middle of calls and blob streams; the upload reconnects, retries
// and delivers everything.
func TestSurvivesDroppedConnections(t *testing.T) {
	logs := faultLogdir(t)
	srv, client := newFakeServer(t)
	var n atomic.Int64
	srv.fault = func(c call) error {
		if n.Add(1)%25 == 0 {
			go srv.dropConnections() // while this call is being served
		}
		return nil
	}
	u := uploadThroughFaults(t, logs, srv, client)
	if u.prog.Retries.Load() == 0 {
		t.Error("no call was retried: the connections were not dropped mid-call")
	}
}
