package e2e_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tbhub/tbhub/services/internal/testenv/fakegcs"
	"github.com/tbhub/tbhub/services/internal/testenv/spanneremu"
)

// roundRobin is a loopback HTTP/1.1 and h2c reverse proxy that sends each
// request (each gRPC call) to the next live backend in turn, as Cloud
// Run's front end spreads one client's calls over a service's instances.
// A backend it cannot reach is taken out of the rotation; the call that
// found it dead fails with 502, which gRPC clients see as Unavailable and
// retry.
type roundRobin struct {
	addr     string
	backends []*url.URL
	next     atomic.Uint64
	mu       sync.Mutex
	dead     map[int]bool
	onCall   func(backend int, r *http.Request)
}

func newRoundRobin(t *testing.T, backends ...string) *roundRobin {
	t.Helper()
	p := &roundRobin{dead: map[int]bool{}}
	for _, b := range backends {
		p.backends = append(p.backends, &url.URL{Scheme: "http", Host: b})
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = l.Addr().String()
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	transport := &http.Transport{Protocols: &protocols}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			i := r.In.Context().Value(backendKey{}).(int)
			r.SetURL(p.backends[i])
			r.Out.Host = r.In.Host
		},
		Transport:     transport,
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			var op *net.OpError
			if errors.As(err, &op) && op.Op == "dial" {
				p.mu.Lock()
				p.dead[r.Context().Value(backendKey{}).(int)] = true
				p.mu.Unlock()
			}
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	var serverProtocols http.Protocols
	serverProtocols.SetHTTP1(true)
	serverProtocols.SetUnencryptedHTTP2(true)
	srv := &http.Server{
		Protocols: &serverProtocols,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			i := p.pick()
			if p.onCall != nil {
				p.onCall(i, r)
			}
			proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), backendKey{}, i)))
		}),
	}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() {
		srv.Close()
		transport.CloseIdleConnections()
	})
	return p
}

type backendKey struct{}

// pick returns the next backend not known dead.
func (p *roundRobin) pick() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for range p.backends {
		i := int(p.next.Add(1) % uint64(len(p.backends)))
		if !p.dead[i] {
			return i
		}
	}
	return 0
}

func (p *roundRobin) markDead(i int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dead[i] = true
}

// TestSeveralInstances runs what Cloud Run runs when it scales out: two
// write services, two read services and a frontend for each read service,
// separate processes over one Spanner emulator and one fake-gcs-server.
// One upload's calls are spread over both write instances by a round-robin
// proxy; the first write instance is killed with SIGKILL in the middle of
// the upload; the upload finishes through the other one and the export is
// exact. Both read instances then serve every series. After the
// experiment is deleted through the surviving write instance, no read
// instance serves it, and the frontend's answer cache serves the old
// answer no longer than its documented 2 s (httpapi.Config.CacheTTL).
func TestSeveralInstances(t *testing.T) {
	bins := buildServerBinaries(t)
	db := spanneremu.NewDatabase(t)
	base := cloudEnv(t, db)
	token := createToken(t, bins, base, db, "researcher")

	writePorts := []string{freePort(t), freePort(t)}
	proxy := newRoundRobin(t, "127.0.0.1:"+writePorts[0], "127.0.0.1:"+writePorts[1])
	frontPorts := []string{freePort(t), freePort(t)}
	var writes []*process
	for _, port := range writePorts {
		writes = append(writes, startProcess(t, bins["write-service"], append(base, "PORT="+port,
			"TBHUB_PUBLIC_ORIGIN=http://127.0.0.1:"+frontPorts[0], "TBHUB_API_ENDPOINT="+proxy.addr)))
		waitHTTPReady(t, "http://127.0.0.1:"+port+"/readyz")
	}
	for _, front := range frontPorts {
		readPort := freePort(t)
		startProcess(t, bins["read-service"], append(base, "PORT="+readPort, "TBHUB_PUBLIC_ORIGIN=http://127.0.0.1:"+front,
			"TBHUB_BLOB_KEY_SECRET=Y2xvdWQtcnVuLXNoYXBlLXRlc3Qta2V5"))
		waitGRPCServing(t, "127.0.0.1:"+readPort)
		startProcess(t, bins["frontend"], []string{"PORT=" + front, "TBHUB_READ_SERVICE=127.0.0.1:" + readPort,
			"TBHUB_EXPERIMENT_SERVICE=" + proxy.addr, "TBHUB_GRPC_INSECURE=true"})
		waitHTTPReady(t, "http://127.0.0.1:"+front+"/readyz")
	}

	// Kill the first write instance once it has taken a few write calls
	// (the upload is then under way on both), without waiting for them.
	const callsBeforeKill = 4
	var writeCalls [2]atomic.Int64
	var killedOnce sync.Once
	var callsAfterKill atomic.Int64
	killed := make(chan struct{})
	proxy.onCall = func(i int, r *http.Request) {
		if !strings.Contains(r.URL.Path, "TensorBoardWriterService/Write") {
			return
		}
		select {
		case <-killed:
			callsAfterKill.Add(1)
			return
		default:
		}
		if writeCalls[i].Add(1) == callsBeforeKill && i == 0 {
			killedOnce.Do(func() {
				go func() {
					_ = writes[0].cmd.Process.Signal(syscall.SIGKILL)
					<-writes[0].done
					close(killed)
				}()
			})
		}
	}

	corpus := corpusDir(t)
	c := &tbup{t: t, home: t.TempDir(), token: token, url: "http://" + proxy.addr}
	sum := parseSummary(t, c.run("upload", "--one-shot", "--json", "--logdir", corpus, "--name", "several instances"))
	select {
	case <-killed:
	default:
		t.Fatalf("the upload finished before the first write instance was killed (write calls per instance: %d, %d)",
			writeCalls[0].Load(), writeCalls[1].Load())
	}
	if callsAfterKill.Load() == 0 {
		t.Errorf("no write call after the kill: the upload did not finish through the second instance")
	}
	t.Logf("write calls before the kill: %d and %d; after: %d", writeCalls[0].Load(), writeCalls[1].Load(), callsAfterKill.Load())
	proxy.markDead(0)

	exportMatchesCorpus(t, c, sum.ExperimentID, corpus)

	// Every acknowledged point, through each read instance.
	series := expectedScalarSeries(t, filepath.Join(corpus, "EXPECTED.json"))
	fronts := make([]*frontClient, len(frontPorts))
	for i, port := range frontPorts {
		fronts[i] = &frontClient{base: "http://127.0.0.1:" + port + "/experiment/" + sum.ExperimentID + "/data/", token: token}
		for _, s := range series {
			points, status := fronts[i].scalars(s.run, s.tag, 0)
			if status != http.StatusOK || len(points) != min(s.points, 1000) || (len(points) > 0 && points[len(points)-1] != s.maxStep) {
				t.Errorf("read instance %d, scalars %s/%s: HTTP %d, %d points ending at step %v; want %d ending at %d",
					i, s.run, s.tag, status, len(points), lastStep(points), min(s.points, 1000), s.maxStep)
			}
		}
	}
	if t.Failed() {
		return
	}

	// Delete through the surviving write instance. A query no frontend has
	// answered before is refused at once by both read instances; the
	// answer cached above may be served for at most the cache's 2 s after
	// it was stored, then it is refused too.
	s := series[0]
	if _, status := fronts[0].scalars(s.run, s.tag, 0); status != http.StatusOK {
		t.Fatalf("scalars before the delete: HTTP %d", status)
	}
	cached := time.Now() // the answer was stored before this
	c.run("delete", "--experiment", sum.ExperimentID)
	for i, f := range fronts {
		if _, status := f.scalars(s.run, s.tag, 424242); status != http.StatusNotFound {
			t.Errorf("read instance %d after the delete, a new query: HTTP %d, want 404", i, status)
		}
	}
	const cacheTTL = 2 * time.Second // httpapi.Config.CacheTTL's default
	for tries := 0; ; tries++ {
		sent := time.Now()
		_, status := fronts[0].scalars(s.run, s.tag, 0)
		if status == http.StatusNotFound {
			break
		}
		if status != http.StatusOK || sent.Sub(cached) > cacheTTL {
			t.Fatalf("frontend after the delete, asked %v after the answer was cached: HTTP %d, want 404 once the %v cache expires",
				sent.Sub(cached), status, cacheTTL)
		}
		if tries > 1000 {
			t.Fatal("the deleted experiment is still served")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cloudEnv starts fake-gcs-server with a bucket and returns the
// environment the services get on Cloud Run, pointing at db and it.
func cloudEnv(t *testing.T, db *spanneremu.Database) []string {
	t.Helper()
	fakegcs.Start(t, "tbhub") // sets STORAGE_EMULATOR_HOST
	return append(os.Environ(),
		"TBHUB_STORE=spanner://"+db.Name,
		"TBHUB_BLOBS=gs://tbhub/cloudrun",
	)
}

// createToken makes an API token for a new user with tbhub token create.
func createToken(t *testing.T, bins map[string]string, env []string, db *spanneremu.Database, user string) string {
	t.Helper()
	var out strings.Builder
	cmd := exec.Command(bins["tbhub"], "token", "create", "--user", user,
		"--store", "spanner://"+db.Name, "--blobs", "gs://tbhub/cloudrun")
	cmd.Env, cmd.Stdout, cmd.Stderr = env, &out, os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("tbhub token create: %v", err)
	}
	return strings.TrimSpace(out.String())
}
