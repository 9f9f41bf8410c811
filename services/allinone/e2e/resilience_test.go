package e2e_test

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	experimentsv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/experiments/v1"

	"github.com/tbhub/tbhub/uploader/eventgen"
)

// generated writes a synthetic logdir and what `tbup inspect --json` says of it,
// the ground truth an export is compared with.
func generated(t *testing.T, c *tbup, spec eventgen.Spec) (logdir, expected string) {
	t.Helper()
	dir := t.TempDir()
	logdir = filepath.Join(dir, "logs")
	if _, err := eventgen.WriteLogdir(logdir, spec); err != nil {
		t.Fatal(err)
	}
	expected = filepath.Join(dir, "expected.json")
	if err := os.WriteFile(expected, []byte(c.run("inspect", "--json", "--logdir", logdir)), 0o644); err != nil {
		t.Fatal(err)
	}
	return logdir, expected
}

func exportAndCompare(t *testing.T, c *tbup, eid, expected string, minSeries int) {
	t.Helper()
	out := t.TempDir()
	c.run("export", "--experiment", eid, "--outdir", out)
	compareWithExpected(t, readExport(t, filepath.Join(out, "experiment_"+eid)), expected, minSeries)
}

var resilienceSpec = eventgen.Spec{Runs: 8, Tags: 10, Steps: 4000, Images: 160, ImageBytes: 30_000, Seed: 3}

// TestResumeAfterKill9: the same upload is killed with SIGKILL at 10 random moments
// and started again each time; the final export matches the logdir and the server
// holds every point exactly once.
func TestResumeAfterKill9(t *testing.T) {
	s := startEmbedded(t, t.TempDir(), "127.0.0.1:0")
	c := newTbup(t, s)
	logdir, expected := generated(t, c, resilienceSpec)
	rng := rand.New(rand.NewPCG(7, 11))
	kills := 0
	for i := 0; i < 10; i++ {
		cmd := c.cmd(context.Background(), "upload", "--one-shot", "--logdir", logdir, "--quiet")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-time.After(time.Duration(50+rng.IntN(900)) * time.Millisecond):
			cmd.Process.Signal(syscall.SIGKILL)
			<-done
			kills++
		case err := <-done:
			if err != nil {
				t.Fatalf("upload %d failed: %v", i, err)
			}
		}
	}
	t.Logf("killed %d of 10 uploads mid-way", kills)
	if kills < 5 {
		t.Errorf("only %d uploads were still running when killed: the logdir is too small to test resuming", kills)
	}
	sum := parseSummary(t, c.run("upload", "--one-shot", "--json", "--logdir", logdir))
	exportAndCompare(t, c, sum.ExperimentID, expected, 80)
	counts := experimentCounts(t, s, sum.ExperimentID)
	want := int64(resilienceSpec.Runs * resilienceSpec.Tags * resilienceSpec.Steps)
	if counts.GetNumScalarPoints() != want {
		t.Errorf("server counts %d scalar points, want %d: duplicates or losses", counts.GetNumScalarPoints(), want)
	}
}

// TestSurvivesServerRestarts: the server is stopped and restarted twice during an
// upload; the upload completes and matches.
func TestSurvivesServerRestarts(t *testing.T) {
	dir := t.TempDir()
	s := startEmbedded(t, dir, "127.0.0.1:0")
	c := newTbup(t, s)
	logdir, expected := generated(t, c, resilienceSpec)
	cmd := c.cmd(context.Background(), "upload", "--one-shot", "--json", "--logdir", logdir)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// The first stop comes once the upload is under way (its experiment exists): a
	// loaded machine may take longer than any fixed pause to reach the handshake.
	waitForExperiment(t, s, 30*time.Second)
	for i := 0; i < 2; i++ {
		if i > 0 {
			time.Sleep(300 * time.Millisecond)
		}
		s.stop()
		time.Sleep(1500 * time.Millisecond) // the uploader sees the server gone and retries
		s = startEmbedded(t, dir, s.addr)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("upload across restarts failed: %v\n%s", err, errOut.String())
		}
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatal("upload did not finish")
	}
	sum := parseSummary(t, out.String())
	c.token = s.token // tokens survive restarts; use the newest for good measure
	exportAndCompare(t, c, sum.ExperimentID, expected, 80)
}

// TestContinuousUpload: while `tbup upload` watches, new runs and files appended to
// appear on the server within 10 seconds; Ctrl-C stops it cleanly.
func TestContinuousUpload(t *testing.T) {
	s := startEmbedded(t, t.TempDir(), "127.0.0.1:0")
	c := newTbup(t, s)
	logdir := filepath.Join(t.TempDir(), "logs")
	if _, err := eventgen.WriteLogdir(logdir, eventgen.Spec{Runs: 1, Tags: 2, Steps: 10}); err != nil {
		t.Fatal(err)
	}
	cmd := c.cmd(context.Background(), "upload", "--logdir", logdir, "--poll", "1s", "--json")
	var out strings.Builder
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	eid := waitForExperiment(t, s, 10*time.Second)
	waitForScalars(t, s, eid, 20, 10*time.Second)

	// Append to the existing file, and start a new run.
	existing, _ := filepath.Glob(filepath.Join(logdir, "run_000", "*tfevents*"))
	w, err := eventgen.Append(existing[0])
	if err != nil {
		t.Fatal(err)
	}
	for step := int64(10); step < 15; step++ {
		if err := w.WriteEvent(eventgen.Scalar("metrics/tag_00", step, 1.7e9+float64(step), 1, nil)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := eventgen.WriteLogdir(filepath.Join(logdir, "later"), eventgen.Spec{Runs: 1, Tags: 1, Steps: 7}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	waitForScalars(t, s, eid, 20+5+7, 10*time.Second)
	t.Logf("new data reached the server %v after it was written", time.Since(start).Round(100*time.Millisecond))

	cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("tbup after Ctrl-C: %v", err)
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("tbup did not stop on Ctrl-C")
	}
	if sum := parseSummary(t, out.String()); sum.ExperimentID != eid || sum.Scalars != 32 {
		t.Errorf("final summary %+v, want 32 scalars to %s", sum, eid)
	}
}

func (s *server) experiments(t testing.TB) (experimentsv1.ExperimentServiceClient, context.Context) {
	t.Helper()
	conn, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+s.token)
	return experimentsv1.NewExperimentServiceClient(conn), ctx
}

func experimentCounts(t testing.TB, s *server, eid string) *experimentsv1.ExperimentCounts {
	t.Helper()
	api, ctx := s.experiments(t)
	resp, err := api.GetExperiment(ctx, &experimentsv1.GetExperimentRequest{ExperimentId: eid})
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetExperiment().GetCounts()
}

func waitForExperiment(t testing.TB, s *server, within time.Duration) string {
	t.Helper()
	api, ctx := s.experiments(t)
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		resp, err := api.ListExperiments(ctx, &experimentsv1.ListExperimentsRequest{Scope: experimentsv1.ListExperimentsRequest_SCOPE_OWNED})
		if err == nil && len(resp.GetExperiments()) > 0 {
			return resp.GetExperiments()[0].GetExperimentId()
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("no experiment was created")
	return ""
}

func waitForScalars(t testing.TB, s *server, eid string, want int64, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	var got int64
	for time.Now().Before(deadline) {
		if got = experimentCounts(t, s, eid).GetNumScalarPoints(); got >= want {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("the server has %d scalar points after %v, want %d", got, within, want)
}
