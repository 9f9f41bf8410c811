package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	experimentsv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/experiments/v1"
	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
)

// abuseScale is how hard each attack pushes; every loop is bounded by
// these counts and by the phase's context.
type abuseScale struct {
	streams     int // WriteBlob streams the attacker opens
	conns       int // slow-body connections
	mdSteps     int // hostile text summaries stored
	mdReaders   int // concurrent readers of them
	mdReads     int // reads per reader
	badTokens   int // invalid tokens sent over gRPC (and a tenth of that over HTTP)
	victimReads int
	runs        int // runs with 1 KiB names the attacker tries to put into one experiment
	readers     int // concurrent anonymous readers of the runs and graphs attacks
	tokens      int // tokens the attacker tries to make and use from the victim's address
}

// scaleFor is the CI scale unless TBHUB_ABUSE=full asks for the one
// docs/benchmarks.md reports (about a minute more).
func scaleFor(full bool) abuseScale {
	if !full {
		return abuseScale{streams: 300, conns: 400, mdSteps: 2, mdReaders: 8, mdReads: 2, badTokens: 3000, victimReads: 30,
			runs: 30_000, readers: 4, tokens: 2000}
	}
	return abuseScale{streams: 2000, conns: 2000, mdSteps: 10, mdReaders: 8, mdReads: 5, badTokens: 20000, victimReads: 200,
		runs: 100_000, readers: 4, tokens: 10_001}
}

// TestAbuse runs the attacks of issues 14 and 20 against `tbhub serve` (the binary,
// with its default limits, on loopback) while a well-behaved user uploads
// ../shared/corpus with tbup and reads it back. The victim's upload and
// reads must succeed under every attack, the attacker must be refused with
// clear answers, and the server's descriptors and memory must stay
// bounded. The attacker connects from 127.0.0.2, a client address of its
// own, as a remote attacker would. The figures it logs are in
// docs/benchmarks.md (TBHUB_ABUSE=full); CI runs a smaller version of each
// attack.
func TestAbuse(t *testing.T) {
	sc := scaleFor(os.Getenv("TBHUB_ABUSE") == "full")
	bins := buildServerBinaries(t)
	data := t.TempDir()
	token := func(user string) string {
		var out bytes.Buffer
		cmd := exec.Command(bins["tbhub"], "token", "create", "--user", user, "--data", data)
		cmd.Stdout, cmd.Stderr = &out, os.Stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("tbhub token create: %v", err)
		}
		return strings.TrimSpace(out.String())
	}
	victimToken, attackerToken := token("victim"), token("attacker")
	addr := "127.0.0.1:" + freePort(t)
	url := "http://" + addr
	srv := startProcess(t, bins["tbhub"], append(os.Environ(), "TBHUB_DATA="+data, "TBHUB_ADDR="+addr), "serve")
	waitHTTPReady(t, url+"/readyz")
	pid := srv.cmd.Process.Pid
	corpus := corpusDir(t)

	// victim uploads the corpus as a new experiment and reads its scalar
	// tags victimReads times, returning the read latencies.
	victim := func(label string) (time.Duration, []time.Duration) {
		c := &tbup{t: t, home: t.TempDir(), token: victimToken, url: url}
		start := time.Now()
		sum := parseSummary(t, c.run("upload", "--one-shot", "--json", "--logdir", corpus, "--name", label))
		upload := time.Since(start)
		var lat []time.Duration
		for i := range sc.victimReads {
			req, _ := http.NewRequest(http.MethodGet, url+"/experiment/"+sum.ExperimentID+"/data/plugin/scalars/tags", nil)
			req.Header.Set("Authorization", "Bearer "+victimToken)
			t0 := time.Now()
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("%s: victim read %d: %v", label, i, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			lat = append(lat, time.Since(t0))
			if resp.StatusCode != http.StatusOK || len(body) < 10 {
				t.Fatalf("%s: victim read %d: %s %.200s", label, i, resp.Status, body)
			}
		}
		return upload, lat
	}

	attacker := attackerClient(t, addr, attackerToken)
	type phase struct {
		name   string
		attack func(ctx context.Context, ready chan<- struct{}) string
	}
	phases := []phase{
		{"idle", func(ctx context.Context, ready chan<- struct{}) string { close(ready); <-ctx.Done(); return "" }},
		{"stalled blob streams", func(ctx context.Context, ready chan<- struct{}) string {
			return attacker.blobStreams(ctx, t, sc.streams, ready)
		}},
		{"slow HTTP bodies", func(ctx context.Context, ready chan<- struct{}) string {
			return slowBodies(ctx, addr, sc.conns, ready)
		}},
		{"hostile markdown", func(ctx context.Context, ready chan<- struct{}) string {
			return attacker.markdown(ctx, t, url, sc, ready)
		}},
		{"bad credentials", func(ctx context.Context, ready chan<- struct{}) string {
			return attacker.badCredentials(ctx, t, url, sc, ready)
		}},
		{"many runs", func(ctx context.Context, ready chan<- struct{}) string {
			return attacker.manyRuns(ctx, t, url, sc, ready)
		}},
		{"hostile graphs", func(ctx context.Context, ready chan<- struct{}) string {
			return attacker.hostileGraphs(ctx, t, url, sc, ready)
		}},
		{"credential flush from the victim's address", func(ctx context.Context, ready chan<- struct{}) string {
			return credentialFlush(ctx, t, addr, attackerToken, sc, ready)
		}},
	}
	var report []string
	for _, ph := range phases {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
		ready := make(chan struct{})
		attackDone := make(chan string, 1)
		go func() { attackDone <- ph.attack(ctx, ready) }()
		select {
		case <-ready:
		case <-ctx.Done():
			t.Fatalf("%s: the attack never got going", ph.name)
		}
		stopSampling := sampleProcess(pid)
		upload, lat := victim(ph.name)
		fds, rss := stopSampling()
		cancel()
		outcome := <-attackDone
		p50, p99 := percentile(lat, 50), percentile(lat, 99)
		line := fmt.Sprintf("| %s | %.1f s | %.1f ms | %.1f ms | %d | %d MiB | %s |", ph.name, upload.Seconds(),
			float64(p50.Microseconds())/1000, float64(p99.Microseconds())/1000, fds, rss>>20, outcome)
		report = append(report, line)
		t.Log(line)
		// Bounds: the per-address connection limit (256) and 64 blob
		// streams per user, plus what the victim and the server itself use.
		if fds > 1000 {
			t.Errorf("%s: the server held %d descriptors; the limits bound it well under 1,000", ph.name, fds)
		}
		if rss > 1<<30 {
			t.Errorf("%s: the server grew to %d MiB", ph.name, rss>>20)
		}
	}
	t.Logf("scale %+v\n| attack | victim upload of the corpus | victim read p50 | p99 | server descriptors (max) | server RSS (max) | attacker got |\n|---|---|---|---|---|---|---|\n%s",
		sc, strings.Join(report, "\n"))
}

// sampleProcess samples pid's open descriptors and resident memory every
// 50 ms until the returned function is called, which returns the maxima.
func sampleProcess(pid int) func() (fds int, rss int64) {
	var maxFDs atomic.Int64
	var maxRSS atomic.Int64
	done := make(chan struct{})
	stopped := make(chan struct{})
	sample := func() {
		if ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil && int64(len(ents)) > maxFDs.Load() {
			maxFDs.Store(int64(len(ents)))
		}
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
			for _, l := range strings.Split(string(b), "\n") {
				if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
					if kb, err := strconv.ParseInt(f[1], 10, 64); err == nil && kb<<10 > maxRSS.Load() {
						maxRSS.Store(kb << 10)
					}
				}
			}
		}
	}
	go func() {
		defer close(stopped)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			sample()
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() (int, int64) {
		close(done)
		<-stopped
		return int(maxFDs.Load()), maxRSS.Load()
	}
}

func percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

// attackerDialer connects from 127.0.0.2: the attacker's own address.
var attackerDialer = &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, Timeout: 10 * time.Second}

type attackerConn struct {
	conns  []*grpc.ClientConn
	writer []servicepb.TensorBoardWriterServiceClient
	exps   experimentsv1.ExperimentServiceClient
	ctx    func(context.Context) context.Context
}

// attackerClient opens four gRPC connections from the attacker's address.
func attackerClient(t *testing.T, addr, token string) *attackerConn {
	a := &attackerConn{ctx: func(ctx context.Context) context.Context {
		return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
	}}
	for range 4 {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithContextDialer(func(ctx context.Context, s string) (net.Conn, error) {
				return attackerDialer.DialContext(ctx, "tcp", s)
			}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		a.conns = append(a.conns, conn)
		a.writer = append(a.writer, servicepb.NewTensorBoardWriterServiceClient(conn))
	}
	a.exps = experimentsv1.NewExperimentServiceClient(a.conns[0])
	return a
}

// codeCounts counts gRPC answers by code.
type codeCounts struct {
	mu sync.Mutex
	n  map[codes.Code]int
}

func (c *codeCounts) add(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[codes.Code]int{}
	}
	c.n[status.Code(err)]++
}

func (c *codeCounts) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var parts []string
	for code, n := range c.n {
		parts = append(parts, fmt.Sprintf("%d %v", n, code))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

// blobStreams opens n WriteBlob streams of one sequence, each sending one
// byte of a claimed 1 MiB and then nothing, and holds them until ctx ends.
func (a *attackerConn) blobStreams(ctx context.Context, t *testing.T, n int, ready chan<- struct{}) string {
	actx := a.ctx(ctx)
	ce, err := a.writer[0].CreateExperiment(actx, &servicepb.CreateExperimentRequest{Name: "streams"})
	if err != nil {
		t.Errorf("attacker: %v", err)
		close(ready)
		return ""
	}
	seq, err := a.writer[0].GetOrCreateBlobSequence(actx, &servicepb.GetOrCreateBlobSequenceRequest{
		ExperimentId: ce.GetExperimentId(), Run: "r", Tag: "t", WallTime: timestamppb.Now(), FinalSequenceLength: int64(n)})
	if err != nil {
		t.Errorf("attacker: %v", err)
		close(ready)
		return ""
	}
	var counts codeCounts
	held := 0
	for i := range n {
		s, err := a.writer[i%len(a.writer)].WriteBlob(actx)
		if err == nil {
			err = s.Send(&servicepb.WriteBlobRequest{BlobSequenceId: seq.GetBlobSequenceId(), Index: int64(i), Data: []byte{1}, BlobBytes: 1 << 20})
		}
		if err == nil {
			_, err = s.Recv()
		}
		counts.add(err)
		if err == nil {
			held++
		}
	}
	close(ready)
	<-ctx.Done()
	if counts.n[codes.ResourceExhausted] == 0 {
		t.Errorf("stalled blob streams: no RESOURCE_EXHAUSTED among %s", counts.String())
	}
	return fmt.Sprintf("%d streams held; answers: %s", held, counts.String())
}

// slowBodies opens n connections that each send a request's headers and
// one byte of its 100,000-byte body, and holds them until ctx ends.
func slowBodies(ctx context.Context, addr string, n int, ready chan<- struct{}) string {
	var conns []net.Conn
	refused := 0
	for range n {
		c, err := attackerDialer.DialContext(ctx, "tcp", addr)
		if err != nil {
			refused++
			continue
		}
		conns = append(conns, c)
		fmt.Fprintf(c, "POST /api/uploader HTTP/1.1\r\nHost: %s\r\nContent-Length: 100000\r\n\r\nx", addr)
	}
	close(ready)
	<-ctx.Done()
	// How many the server still holds: a closed one reads EOF at once.
	open := 0
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		_, err := c.Read(make([]byte, 1))
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			open++
		}
		c.Close()
	}
	return fmt.Sprintf("%d of %d connections held open by the server, the rest answered 429 and closed", open, n)
}

// markdown stores steps hostile text summaries (">" × 900,000) in a public
// experiment and reads them with readers concurrent anonymous requests.
func (a *attackerConn) markdown(ctx context.Context, t *testing.T, url string, sc abuseScale, ready chan<- struct{}) string {
	actx := a.ctx(ctx)
	ce, err := a.writer[0].CreateExperiment(actx, &servicepb.CreateExperimentRequest{Name: "markdown"})
	if err == nil {
		_, err = a.exps.SetVisibility(actx, &experimentsv1.SetVisibilityRequest{ExperimentId: ce.GetExperimentId(), Visibility: experimentsv1.Visibility_VISIBILITY_PUBLIC})
	}
	md := &tbpb.SummaryMetadata{PluginData: &tbpb.SummaryMetadata_PluginData{PluginName: "text"}, DataClass: tbpb.DataClass_DATA_CLASS_TENSOR}
	for step := range sc.mdSteps {
		if err != nil {
			break
		}
		text := strings.Repeat(">", 900_000-step) // distinct, so no cache helps
		_, err = a.writer[0].WriteTensor(actx, &servicepb.WriteTensorRequest{ExperimentId: ce.GetExperimentId(), Runs: []*servicepb.WriteTensorRequest_Run{{
			Name: "r", Tags: []*servicepb.WriteTensorRequest_Tag{{Name: "evil", Metadata: md, Points: []*servicepb.TensorPoint{{
				Step: int64(step), WallTime: timestamppb.Now(),
				Value: &tbpb.TensorProto{Dtype: tbpb.DataType_DT_STRING, StringVal: [][]byte{[]byte(text)}},
			}}}}}}})
	}
	if err != nil {
		t.Errorf("attacker storing hostile markdown: %v", err)
		close(ready)
		return ""
	}
	var wg sync.WaitGroup
	var ok, truncated, failed atomic.Int64
	route := url + "/experiment/" + ce.GetExperimentId() + "/data/plugin/text/text?run=r&tag=evil"
	for range sc.mdReaders {
		wg.Go(func() {
			for range sc.mdReads {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, route, nil)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						failed.Add(1)
					}
					return
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					failed.Add(1)
					continue
				}
				ok.Add(1)
				if bytes.Contains(body, []byte("Truncated")) || bytes.Contains(body, []byte("unformatted")) {
					truncated.Add(1)
				}
			}
		})
	}
	close(ready)
	wg.Wait()
	<-ctx.Done()
	if ok.Load() > 0 && truncated.Load() != ok.Load() {
		t.Errorf("hostile markdown: %d of %d answers say nothing of truncation", ok.Load()-truncated.Load(), ok.Load())
	}
	return fmt.Sprintf("%d reads answered (%d truncated or unformatted), %d failed", ok.Load(), truncated.Load(), failed.Load())
}

// badCredentials sends sc.badTokens unknown tokens over gRPC and a tenth
// of that through the HTTP API, from the attacker's address, and checks
// that, past the per-address budget, they are answered RESOURCE_EXHAUSTED
// and 429 with Retry-After, while the attacker's own token, verified
// before, still works from the same address.
func (a *attackerConn) badCredentials(ctx context.Context, t *testing.T, url string, sc abuseScale, ready chan<- struct{}) string {
	// The flood is a fixed number of calls and runs to its end: ctx ends
	// when the victim is done, which on an idle machine is before the
	// flood is (a CI run stopped it after 1,457 of 3,000 calls and before
	// any HTTP one). flood bounds it in time instead.
	flood, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
	defer cancel()
	if _, err := a.exps.ListExperiments(a.ctx(flood), &experimentsv1.ListExperimentsRequest{}); err != nil {
		t.Errorf("attacker's own token before the attack: %v", err)
	}
	var grpcCodes codeCounts
	var started sync.Once
	for i := range sc.badTokens {
		if flood.Err() != nil {
			break
		}
		bad := metadata.AppendToOutgoingContext(flood, "authorization", fmt.Sprintf("Bearer tbh_guess%d", i))
		_, err := a.writer[i%len(a.writer)].CreateExperiment(bad, &servicepb.CreateExperimentRequest{})
		grpcCodes.add(err)
		if i == 200 {
			started.Do(func() { close(ready) }) // past the burst: the victim runs while the flood goes on
		}
	}
	started.Do(func() { close(ready) })
	httpClient := &http.Client{Transport: &http.Transport{DialContext: attackerDialer.DialContext}}
	statuses := map[int]int{}
	retryAfter := 0
	for i := range sc.badTokens / 10 {
		req, _ := http.NewRequestWithContext(flood, http.MethodGet, url+"/api/experiments", nil)
		req.Header.Set("Authorization", fmt.Sprintf("Bearer tbh_http%d", i))
		resp, err := httpClient.Do(req)
		if err != nil {
			break
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		statuses[resp.StatusCode]++
		if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") != "" {
			retryAfter++
		}
	}
	if _, err := a.exps.ListExperiments(a.ctx(flood), &experimentsv1.ListExperimentsRequest{}); err != nil {
		t.Errorf("attacker's own verified token during its flood: %v", err)
	}
	<-ctx.Done()
	if n := grpcCodes.n[codes.ResourceExhausted]; n < sc.badTokens/2 {
		t.Errorf("bad credentials: only %d of %d gRPC answers RESOURCE_EXHAUSTED (%s)", n, sc.badTokens, grpcCodes.String())
	}
	if retryAfter < sc.badTokens/20 {
		t.Errorf("bad credentials: only %d of %d HTTP answers 429 with Retry-After (%v)", retryAfter, sc.badTokens/10, statuses)
	}
	return fmt.Sprintf("gRPC: %s; HTTP: %v (%d with Retry-After)", grpcCodes.String(), statuses, retryAfter)
}
