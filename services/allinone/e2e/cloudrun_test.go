package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health/grpc_health_v1"

	"github.com/tbhub/tbhub/services/internal/testenv/spanneremu"
)

// TestCloudRunShape stands in for the Cloud Run deployment (infra/terraform,
// docker-compose.yml): the write service, the read service and the frontend
// run as three separate processes of their own binaries, configured only by
// the environment the deployment gives them, on the Spanner emulator and a
// fake-gcs-server reached through SPANNER_EMULATOR_HOST and
// STORAGE_EMULATOR_HOST. tbup uploads the corpus through the write service,
// every scalar series is read back through the frontend and compared with
// EXPECTED.json, the experiment stays private to callers without the
// token, the read service is stopped and replaced under load, and every
// process stops gracefully on SIGTERM.
func TestCloudRunShape(t *testing.T) {
	bins := buildServerBinaries(t)
	db := spanneremu.NewDatabase(t)
	base := cloudEnv(t, db)
	writePort, readPort, frontPort := freePort(t), freePort(t), freePort(t)
	frontURL := "http://127.0.0.1:" + frontPort
	writeURL := "http://127.0.0.1:" + writePort
	token := createToken(t, bins, base, db, "researcher")

	write := startProcess(t, bins["write-service"], append(base, "PORT="+writePort,
		"TBHUB_PUBLIC_ORIGIN="+frontURL, "TBHUB_API_ENDPOINT=127.0.0.1:"+writePort))
	waitHTTPReady(t, writeURL+"/readyz")
	readMetrics := "127.0.0.1:" + freePort(t)
	readEnv := append(base, "PORT="+readPort, "TBHUB_PUBLIC_ORIGIN="+frontURL,
		"TBHUB_BLOB_KEY_SECRET=Y2xvdWQtcnVuLXNoYXBlLXRlc3Qta2V5", "TBHUB_METRICS_ADDR="+readMetrics)
	read := startProcess(t, bins["read-service"], readEnv)
	waitGRPCServing(t, "127.0.0.1:"+readPort)
	startProcess(t, bins["frontend"], []string{"PORT=" + frontPort,
		"TBHUB_READ_SERVICE=127.0.0.1:" + readPort, "TBHUB_EXPERIMENT_SERVICE=127.0.0.1:" + writePort, "TBHUB_GRPC_INSECURE=true"})
	waitHTTPReady(t, frontURL+"/readyz")

	corpus := corpusDir(t)
	c := &tbup{t: t, home: t.TempDir(), token: token, url: writeURL}
	sum := parseSummary(t, c.run("upload", "--one-shot", "--json", "--logdir", corpus, "--name", "cloud run shape"))
	if want := frontURL + "/experiment/" + sum.ExperimentID + "/"; sum.URL != want {
		t.Errorf("experiment URL %q, want the frontend's %q (the handshake's URL template)", sum.URL, want)
	}

	// Every scalar series through the frontend, against EXPECTED.json.
	series := expectedScalarSeries(t, filepath.Join(corpus, "EXPECTED.json"))
	front := &frontClient{base: frontURL + "/experiment/" + sum.ExperimentID + "/data/", token: token}
	for _, s := range series {
		points, status := front.scalars(s.run, s.tag, 0)
		if status != http.StatusOK {
			t.Errorf("scalars %s/%s: HTTP %d", s.run, s.tag, status)
			continue
		}
		if len(points) != min(s.points, 1000) || (len(points) > 0 && points[len(points)-1] != s.maxStep) {
			t.Errorf("scalars %s/%s: %d points ending at step %v, want %d ending at %d", s.run, s.tag, len(points), lastStep(points), s.points, s.maxStep)
		}
	}
	if status := front.status("runs", ""); status != http.StatusOK {
		t.Errorf("runs with a token: HTTP %d", status)
	}
	if status := (&frontClient{base: front.base}).status("runs", ""); status != http.StatusNotFound {
		t.Errorf("runs of a private experiment without a token: HTTP %d, want 404", status)
	}
	// The web UI's management routes reach the write service through the
	// frontend (TBHUB_EXPERIMENT_SERVICE).
	patch, _ := http.NewRequest(http.MethodPatch, frontURL+"/api/experiments/"+sum.ExperimentID, strings.NewReader(`{"name":"renamed in the browser"}`))
	patch.Header.Set("Authorization", "Bearer "+token)
	if resp, err := http.DefaultClient.Do(patch); err != nil {
		t.Error(err)
	} else {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"name":"renamed in the browser"`) {
			t.Errorf("PATCH /api/experiments/EID through the frontend: %d %s", resp.StatusCode, body)
		}
	}
	checkObservability(t, observed{frontURL: frontURL, writeURL: writeURL, readMetricsURL: "http://" + readMetrics,
		eid: sum.ExperimentID, writeLog: write.log, readLog: read.log})

	// Replace the read service (SIGTERM, as Cloud Run stops an instance,
	// then a new process on the same address) while the frontend is asked
	// for data without a pause. The frontend's client waits for and retries
	// an unavailable read service, so no request may fail.
	var (
		mu       sync.Mutex
		failures []string
		requests int
	)
	stop := make(chan struct{})
	loopDone := make(chan struct{})
	go func() {
		defer close(loopDone)
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			s := series[i%len(series)]
			// A distinct query each time, so the frontend's short response
			// cache cannot answer for the read service.
			_, status := front.scalars(s.run, s.tag, i)
			mu.Lock()
			requests++
			if status != http.StatusOK {
				failures = append(failures, fmt.Sprintf("HTTP %d", status))
			}
			mu.Unlock()
		}
	}()
	time.Sleep(300 * time.Millisecond)
	read.stop(t)
	startProcess(t, bins["read-service"], readEnv)
	waitGRPCServing(t, "127.0.0.1:"+readPort)
	close(stop)
	<-loopDone
	if requests < 2 {
		t.Errorf("only %d requests while the read service was replaced", requests)
	}
	if len(failures) > 0 {
		t.Errorf("%d of %d frontend requests failed while the read service was replaced: %s",
			len(failures), requests, strings.Join(failures, ", "))
	}
}

var (
	serverBinsOnce sync.Once
	serverBins     map[string]string
	serverBinsErr  error
)

// buildServerBinaries builds the binaries the container images hold, once
// per test binary.
func buildServerBinaries(t *testing.T) map[string]string {
	t.Helper()
	serverBinsOnce.Do(func() {
		dir := filepath.Dir(tbupBin)
		pkgs := map[string]string{
			"tbhub":         "github.com/tbhub/tbhub/services/allinone/cmd/tbhub",
			"write-service": "github.com/tbhub/tbhub/services/cmd/write-service",
			"read-service":  "github.com/tbhub/tbhub/services/cmd/read-service",
			"frontend":      "github.com/tbhub/tbhub/frontend-api/cmd/frontend",
		}
		serverBins = map[string]string{}
		for name, pkg := range pkgs {
			out := filepath.Join(dir, name)
			if b, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
				serverBinsErr = fmt.Errorf("building %s: %v\n%s", pkg, err, b)
				return
			}
			serverBins[name] = out
		}
	})
	if serverBinsErr != nil {
		t.Fatal(serverBinsErr)
	}
	return serverBins
}

// process is a server process; its output goes to a log file that is
// printed if the test fails.
type process struct {
	cmd  *exec.Cmd
	done chan error
	log  string
}

func startProcess(t *testing.T, bin string, env []string, args ...string) *process {
	t.Helper()
	logf, err := os.CreateTemp(t.TempDir(), filepath.Base(bin)+"-*.log")
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	p := &process{cmd: exec.Command(bin, args...), done: make(chan error, 1), log: logf.Name()}
	p.cmd.Env, p.cmd.Stdout, p.cmd.Stderr = env, logf, logf
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		p.stop(t)
		if t.Failed() {
			b, _ := os.ReadFile(p.log)
			t.Logf("%s output:\n%s", filepath.Base(bin), b)
		}
	})
	return p
}

// stop sends SIGTERM and waits for a graceful exit (status 0) within
// Cloud Run's 10 s grace period.
func (p *process) stop(t *testing.T) {
	t.Helper()
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		if err != nil {
			t.Errorf("%s after SIGTERM: %v", filepath.Base(p.cmd.Path), err)
		}
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Errorf("%s did not stop within 10 s of SIGTERM", filepath.Base(p.cmd.Path))
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

func waitHTTPReady(t *testing.T, u string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(u)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready within 30 s (last: %v)", u, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func waitGRPCServing(t *testing.T, addr string) {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	health := grpc_health_v1.NewHealthClient(conn)
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		resp, err := health.Check(ctx, &grpc_health_v1.HealthCheckRequest{})
		cancel()
		if err == nil && resp.GetStatus() == grpc_health_v1.HealthCheckResponse_SERVING {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not serving within 30 s (last: %v)", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type scalarSeries struct {
	run, tag string
	points   int
	maxStep  int64
}

// expectedScalarSeries lists EXPECTED.json's scalar series, sorted.
func expectedScalarSeries(t *testing.T, path string) []scalarSeries {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Runs map[string]map[string]struct {
			DataClass string `json:"data_class"`
			Points    int    `json:"points"`
			MaxStep   int64  `json:"max_step"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var out []scalarSeries
	for run, tags := range doc.Runs {
		for tag, s := range tags {
			if s.DataClass == "scalar" && s.Points > 0 {
				out = append(out, scalarSeries{run: run, tag: tag, points: s.Points, maxStep: s.MaxStep})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].run+"\x00"+out[i].tag < out[j].run+"\x00"+out[j].tag })
	if len(out) == 0 {
		t.Fatal("no scalar series in EXPECTED.json")
	}
	return out
}

// frontClient asks the frontend for one experiment's TensorBoard data.
type frontClient struct {
	base  string // .../experiment/EID/data/
	token string
}

func (f *frontClient) get(route, query string) (int, []byte) {
	req, err := http.NewRequest(http.MethodGet, f.base+route+"?"+query, nil)
	if err != nil {
		return 0, nil
	}
	if f.token != "" {
		req.Header.Set("Authorization", "Bearer "+f.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

func (f *frontClient) status(route, query string) int {
	status, _ := f.get(route, query)
	return status
}

// scalars returns the steps of data/scalars' [wall time, step, value]
// triples; nonce makes the URL distinct.
func (f *frontClient) scalars(run, tag string, nonce int) ([]int64, int) {
	q := url.Values{"run": {run}, "tag": {tag}}
	if nonce != 0 {
		q.Set("nonce", strconv.Itoa(nonce))
	}
	status, body := f.get("scalars", q.Encode())
	if status != http.StatusOK {
		return nil, status
	}
	var err error
	// Values may be NaN or Infinity (TensorBoard's JSON): keep them raw.
	var points [][3]json.RawMessage
	if err := json.Unmarshal(body, &points); err != nil {
		return nil, -1
	}
	steps := make([]int64, len(points))
	for i, p := range points {
		if steps[i], err = strconv.ParseInt(string(p[1]), 10, 64); err != nil {
			return nil, -1
		}
	}
	return steps, status
}

func lastStep(steps []int64) any {
	if len(steps) == 0 {
		return "none"
	}
	return steps[len(steps)-1]
}
