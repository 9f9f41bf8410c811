package e2e_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tbhub/tbhub/services/internal/testenv/spanneremu"
	"github.com/tbhub/tbhub/uploader/eventgen"
)

// loadDuration is how long TestManyTenants keeps uploading:
// $TBHUB_LOAD_DURATION (a Go duration; the numbers in docs/benchmarks.md
// are from 2m), else 20 s, CI's short run.
func loadDuration(t *testing.T) time.Duration {
	if v := os.Getenv("TBHUB_LOAD_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("TBHUB_LOAD_DURATION=%q: %v", v, err)
		}
		return d
	}
	return 20 * time.Second
}

// loadWriteInstances is how many write service processes TestManyTenants
// runs behind a round-robin proxy (as Cloud Run spreads calls over a
// service's instances): $TBHUB_LOAD_WRITE_INSTANCES, else 1 (no proxy).
func loadWriteInstances(t *testing.T) int {
	if v := os.Getenv("TBHUB_LOAD_WRITE_INSTANCES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("TBHUB_LOAD_WRITE_INSTANCES=%q: want a positive number", v)
		}
		return n
	}
	return 1
}

// TestManyTenants is a bounded load test of the three-process shape (write
// service, read service, frontend) on the Spanner emulator and
// fake-gcs-server: 20 uploaders, each a different user with its own
// experiment, grow their logdirs and upload the new steps round after
// round for loadDuration, while 20 readers ask the frontend for those
// experiments' scalars. Every read succeeds and never sees fewer points
// than before; afterwards every experiment exports exactly what its logdir
// holds (nothing lost, nothing duplicated). Throughput and latencies are
// logged; docs/benchmarks.md has the full run's.
func TestManyTenants(t *testing.T) {
	const uploaders, readers = 20, 20
	const maxRounds = 1000 // bounds the loop whatever the duration
	duration := loadDuration(t)
	spec := eventgen.Spec{Runs: 2, Tags: 5, Steps: 100, Images: 2, ImageBytes: 2_000}
	pointsPerRound := spec.Runs * spec.Tags * spec.Steps

	bins := buildServerBinaries(t)
	db := spanneremu.NewDatabase(t)
	base := cloudEnv(t, db)
	readPort, frontPort := freePort(t), freePort(t)
	frontURL := "http://127.0.0.1:" + frontPort
	var writeAddrs []string
	for range loadWriteInstances(t) {
		writeAddrs = append(writeAddrs, "127.0.0.1:"+freePort(t))
	}
	// One write instance is called directly, several through a proxy.
	writeAddr := writeAddrs[0]
	if len(writeAddrs) > 1 {
		writeAddr = newRoundRobin(t, writeAddrs...).addr
	}
	writeURL := "http://" + writeAddr
	for _, addr := range writeAddrs {
		startProcess(t, bins["write-service"], append(base, "PORT="+addr[len("127.0.0.1:"):],
			"TBHUB_PUBLIC_ORIGIN="+frontURL, "TBHUB_API_ENDPOINT="+writeAddr))
		waitHTTPReady(t, "http://"+addr+"/readyz")
	}
	startProcess(t, bins["read-service"], append(base, "PORT="+readPort, "TBHUB_PUBLIC_ORIGIN="+frontURL,
		"TBHUB_BLOB_KEY_SECRET=Y2xvdWQtcnVuLXNoYXBlLXRlc3Qta2V5"))
	waitGRPCServing(t, "127.0.0.1:"+readPort)
	startProcess(t, bins["frontend"], []string{"PORT=" + frontPort,
		"TBHUB_READ_SERVICE=127.0.0.1:" + readPort, "TBHUB_EXPERIMENT_SERVICE=" + writeAddr, "TBHUB_GRPC_INSECURE=true"})
	waitHTTPReady(t, frontURL+"/readyz")

	type tenant struct {
		c      *tbup
		logdir string
		eid    string
		rounds int
	}
	tenants := make([]*tenant, uploaders)
	for i := range tenants {
		token := createToken(t, bins, base, db, fmt.Sprintf("tenant-%02d", i))
		tn := &tenant{c: &tbup{t: t, home: t.TempDir(), token: token, url: writeURL}, logdir: filepath.Join(t.TempDir(), "logs")}
		s := spec
		s.Seed = int64(i)
		if _, err := eventgen.WriteLogdir(tn.logdir, s); err != nil {
			t.Fatal(err)
		}
		tn.eid = parseSummary(t, tn.c.run("upload", "--one-shot", "--json", "--logdir", tn.logdir, "--name", "tenant")).ExperimentID
		tn.rounds = 1
		tenants[i] = tn
	}

	var (
		mu        sync.Mutex
		uploadLat []time.Duration
		readLat   []time.Duration
		failures  []string
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(failures) < 20 {
			failures = append(failures, fmt.Sprintf(format, args...))
		}
	}
	start := time.Now()
	deadline := start.Add(duration)
	var wg sync.WaitGroup
	for i, tn := range tenants {
		wg.Go(func() {
			for tn.rounds < maxRounds && time.Now().Before(deadline) {
				s := spec
				s.Seed, s.FirstStep = int64(i), tn.rounds*spec.Steps
				if _, err := eventgen.WriteLogdir(tn.logdir, s); err != nil {
					fail("tenant %d: %v", i, err)
					return
				}
				began := time.Now()
				out, err := tn.c.cmd(t.Context(), "upload", "--one-shot", "--quiet", "--logdir", tn.logdir).CombinedOutput()
				if err != nil {
					fail("tenant %d round %d: %v: %s", i, tn.rounds, err, out)
					return
				}
				mu.Lock()
				uploadLat = append(uploadLat, time.Since(began))
				mu.Unlock()
				tn.rounds++
			}
		})
	}
	readsDone := make(chan struct{})
	var readersWG sync.WaitGroup
	for r := range readers {
		readersWG.Go(func() {
			tn := tenants[r%uploaders]
			front := &frontClient{base: frontURL + "/experiment/" + tn.eid + "/data/", token: tn.c.token}
			seen := 0
			for n := 1; n <= 100_000; n++ {
				select {
				case <-readsDone:
					return
				default:
				}
				began := time.Now()
				points, status := front.scalars("run_000", "metrics/tag_00", r*1_000_000+n)
				elapsed := time.Since(began)
				if status != http.StatusOK {
					fail("reader %d: HTTP %d", r, status)
					return
				}
				mu.Lock()
				readLat = append(readLat, elapsed)
				mu.Unlock()
				if len(points) < min(seen, 1000) {
					fail("reader %d: %d points after %d", r, len(points), seen)
					return
				}
				seen = len(points)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(readsDone)
	readersWG.Wait()
	for _, f := range failures {
		t.Error(f)
	}
	if t.Failed() {
		return
	}

	rounds := 0
	for _, tn := range tenants {
		rounds += tn.rounds - 1
	}
	t.Logf("%d write instances, %d uploaders, %d readers, %v: %d upload rounds of %d points (+%d images), %.0f points/s; upload round p50 %v p99 %v; %d reads, %.1f reads/s, p50 %v p99 %v",
		len(writeAddrs), uploaders, readers, elapsed.Round(time.Second), rounds, pointsPerRound, spec.Images,
		float64(rounds*pointsPerRound)/elapsed.Seconds(), quantile(uploadLat, 0.5), quantile(uploadLat, 0.99),
		len(readLat), float64(len(readLat))/elapsed.Seconds(), quantile(readLat, 0.5), quantile(readLat, 0.99))
	if rounds == 0 {
		t.Fatal("no upload round finished within the load test's duration")
	}

	// Nothing lost or duplicated: each experiment exports exactly what
	// `tbup inspect` finds in its logdir.
	for i, tn := range tenants {
		expected := filepath.Join(t.TempDir(), "expected.json")
		if err := os.WriteFile(expected, []byte(tn.c.run("inspect", "--json", "--logdir", tn.logdir)), 0o644); err != nil {
			t.Fatal(err)
		}
		exportAndCompare(t, tn.c, tn.eid, expected, spec.Runs*spec.Tags)
		if t.Failed() {
			t.Fatalf("tenant %d's export differs from its logdir", i)
		}
	}
}

// quantile returns the q-quantile of ds (nearest rank).
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[max(0, min(i, len(s)-1))].Round(time.Millisecond)
}
