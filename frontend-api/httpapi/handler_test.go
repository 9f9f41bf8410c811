package httpapi_test

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/tbhub/tbhub/frontend-api/httpapi"
	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/route/routetest"
	datapb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/data"
	"github.com/tbhub/tbhub/schemas/readhint"
)

// fakeProvider is a data provider with one scalar series and one blob,
// that fails with err when it is set, and records the credential of the
// last call.
type fakeProvider struct {
	datapb.UnimplementedTensorBoardDataProviderServer
	mu    sync.Mutex
	err   error
	auth  []string
	calls int
	// numPoints is the downsample of the last ReadScalars, hints its
	// tbhub read hints (readhint).
	numPoints int64
	hints     metadata.MD
	// gate, when set, holds every call until it is closed.
	gate chan struct{}
}

func (f *fakeProvider) check(ctx context.Context) error {
	md, _ := metadata.FromIncomingContext(ctx)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.auth = md.Get("authorization")
	f.calls++
	gate := f.gate
	f.mu.Unlock()
	if gate != nil {
		<-gate
	}
	f.mu.Lock()
	return f.err
}

func (f *fakeProvider) ReadScalars(ctx context.Context, req *datapb.ReadScalarsRequest) (*datapb.ReadScalarsResponse, error) {
	if err := f.check(ctx); err != nil {
		return nil, err
	}
	if req.GetDownsample() == nil || req.GetPluginFilter().GetPluginName() != "scalars" {
		return nil, status.Error(codes.InvalidArgument, "bad request")
	}
	md, _ := metadata.FromIncomingContext(ctx)
	f.mu.Lock()
	f.numPoints = req.GetDownsample().GetNumPoints()
	f.hints = metadata.MD{}
	for k, v := range md {
		if strings.HasPrefix(k, "tbhub-") {
			f.hints[k] = v
		}
	}
	f.mu.Unlock()
	d := &datapb.ScalarData{Step: []int64{1, 2}, WallTime: []float64{10.5, 11}, Value: []float32{float32(math.NaN()), 0.25}}
	if req.GetRunTagFilter().GetTags().GetNames()[0] == "long" {
		d = &datapb.ScalarData{}
		for i := range 200 {
			d.Step, d.WallTime, d.Value = append(d.Step, int64(i)), append(d.WallTime, 1e9+float64(i)), append(d.Value, float32(i))
		}
	}
	return &datapb.ReadScalarsResponse{Runs: []*datapb.ReadScalarsResponse_RunEntry{{RunName: "train", Tags: []*datapb.ReadScalarsResponse_TagEntry{{
		TagName: "loss", Data: d,
	}}}}}, nil
}

func (f *fakeProvider) ListScalars(ctx context.Context, req *datapb.ListScalarsRequest) (*datapb.ListScalarsResponse, error) {
	if err := f.check(ctx); err != nil {
		return nil, err
	}
	return &datapb.ListScalarsResponse{Runs: []*datapb.ListScalarsResponse_RunEntry{{RunName: "train", Tags: []*datapb.ListScalarsResponse_TagEntry{{
		TagName: "loss", Metadata: &datapb.ScalarMetadata{MaxStep: 2, MaxWallTime: 11},
	}}}}}, nil
}

func (f *fakeProvider) ReadBlob(req *datapb.ReadBlobRequest, s grpc.ServerStreamingServer[datapb.ReadBlobResponse]) error {
	if err := f.check(s.Context()); err != nil {
		return err
	}
	png := "\x89PNG\r\n\x1a\n" + strings.Repeat("x", 100)
	for i := 0; i < len(png); i += 30 {
		if err := s.Send(&datapb.ReadBlobResponse{Data: []byte(png[i:min(i+30, len(png))])}); err != nil {
			return err
		}
	}
	return nil
}

func start(t *testing.T, creds httpapi.Credentials) (*fakeProvider, *httptest.Server) {
	return startWith(t, httpapi.Config{Credentials: creds, CacheTTL: -1})
}

func startWith(t *testing.T, cfg httpapi.Config) (*fakeProvider, *httptest.Server) {
	fake, _, srv := startHandler(t, cfg)
	return fake, srv
}

func startHandler(t *testing.T, cfg httpapi.Config) (*fakeProvider, *httpapi.Handler, *httptest.Server) {
	t.Helper()
	fake := &fakeProvider{}
	cfg.Data = routetest.Dial(t, fake)
	h, err := httpapi.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return fake, h, srv
}

func get(t *testing.T, url string, header ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r io.Reader = resp.Body
	if resp.Header.Get("Content-Encoding") == "gzip" {
		if r, err = gzip.NewReader(resp.Body); err != nil {
			t.Fatal(err)
		}
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

const scalarsPath = "/experiment/e1/data/plugin/scalars/scalars?run=train&tag=loss"

func TestScalarsJSONAndHeaders(t *testing.T) {
	fake, srv := start(t, nil)
	resp, body := get(t, srv.URL+scalarsPath, "Authorization", "Bearer tbh_x", "Accept-Encoding", "gzip")
	if resp.StatusCode != 200 || body != `[[10.5,1,"NaN"],[11.0,2,0.25]]` {
		t.Errorf("scalars: %d %s", resp.StatusCode, body)
	}
	if len(fake.auth) != 1 || fake.auth[0] != "Bearer tbh_x" {
		t.Errorf("the credential reached the service as %q", fake.auth)
	}
	// Small answers are not worth compressing; larger ones are.
	if resp.Header.Get("Content-Encoding") != "" || resp.Header.Get("Content-Type") != "application/json" ||
		resp.Header.Get("Cache-Control") != "private, no-cache" {
		t.Errorf("headers: %v", resp.Header)
	}
	resp, body = get(t, srv.URL+strings.Replace(scalarsPath, "loss", "long", 1), "Accept-Encoding", "gzip")
	if resp.Header.Get("Content-Encoding") != "gzip" || !strings.HasPrefix(body, "[[1000000000.0,0,0.0],") {
		t.Errorf("long series: %v %.40s", resp.Header, body)
	}
	resp, body = get(t, srv.URL+scalarsPath+"&format=csv")
	if resp.Header.Get("Content-Encoding") != "" || body != "Wall time,Step,Value\r\n10.5,1,nan\r\n11.0,2,0.25\r\n" {
		t.Errorf("csv without gzip: %q %v", body, resp.Header)
	}
	if len(fake.auth) != 0 {
		t.Errorf("an anonymous request carried %q", fake.auth)
	}
}

func TestBlobsAreImmutableAndUncompressed(t *testing.T) {
	_, srv := start(t, nil)
	resp, body := get(t, srv.URL+"/experiment/e1/data/plugin/images/individualImage?blob_key=k", "Accept-Encoding", "gzip")
	if resp.StatusCode != 200 || len(body) != 108 || resp.Header.Get("Content-Type") != "image/png" ||
		resp.Header.Get("Content-Encoding") != "" || !strings.Contains(resp.Header.Get("Cache-Control"), "immutable") ||
		!strings.Contains(resp.Header.Get("Cache-Control"), "private") {
		t.Errorf("individualImage: %d, %d bytes, %v", resp.StatusCode, len(body), resp.Header)
	}
}

func TestErrorMapping(t *testing.T) {
	fake, srv := start(t, nil)
	for _, tc := range []struct {
		err  error
		want int
		text string
	}{
		{status.Error(codes.NotFound, "experiment not found"), 404, "experiment not found"},
		{status.Error(codes.InvalidArgument, "downsample is required"), 400, "downsample is required"},
		{status.Error(codes.OutOfRange, "too many points"), 400, "too many points"},
		{status.Error(codes.Unauthenticated, "invalid credentials"), 401, "invalid credentials"},
		{status.Error(codes.PermissionDenied, "scopes"), 403, "scopes"},
		{status.Error(codes.Unavailable, "retry"), 503, "retry"},
		{status.Error(codes.Internal, "secret stack trace"), 500, "internal error"},
	} {
		fake.mu.Lock()
		fake.err = tc.err
		fake.mu.Unlock()
		resp, body := get(t, srv.URL+scalarsPath)
		if resp.StatusCode != tc.want || strings.TrimSpace(body) != tc.text || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
			t.Errorf("%v: %d %q, want %d %q", tc.err, resp.StatusCode, body, tc.want, tc.text)
		}
	}
	fake.err = nil
	if resp, _ := get(t, srv.URL+"/experiment/e1/data/plugin/scalars/scalars?run=train"); resp.StatusCode != 400 {
		t.Errorf("missing tag: %d", resp.StatusCode)
	}
}

// The credential hook is where the browser session plugs in.
func TestCredentialsHook(t *testing.T) {
	fake, srv := start(t, func(r *http.Request) (string, error) {
		c, err := r.Cookie("session")
		if err != nil {
			return "", nil
		}
		if c.Value == "bad" {
			return "", io.ErrUnexpectedEOF
		}
		return "Bearer from-" + c.Value, nil
	})
	if resp, _ := get(t, srv.URL+scalarsPath, "Cookie", "session=abc"); resp.StatusCode != 200 || len(fake.auth) != 1 || fake.auth[0] != "Bearer from-abc" {
		t.Errorf("cookie credential: %d %q", resp.StatusCode, fake.auth)
	}
	if resp, _ := get(t, srv.URL+scalarsPath, "Cookie", "session=bad"); resp.StatusCode != 401 {
		t.Errorf("a rejected session: %d", resp.StatusCode)
	}
}

// A request with Cache-Control: no-cache (a live page that saw the
// experiment change) is answered from the services, and its answer serves
// the next requests.
func TestResponseCacheNoCache(t *testing.T) {
	fake, srv := startWith(t, httpapi.Config{CacheTTL: time.Hour})
	calls := func() int {
		fake.mu.Lock()
		defer fake.mu.Unlock()
		return fake.calls
	}
	get(t, srv.URL+scalarsPath, "Authorization", "Bearer a")
	for _, h := range []string{"no-cache", "max-age=0"} {
		before := calls()
		if resp, _ := get(t, srv.URL+scalarsPath, "Authorization", "Bearer a", "Cache-Control", h); resp.StatusCode != 200 {
			t.Fatalf("Cache-Control: %s: %d", h, resp.StatusCode)
		}
		if n := calls(); n != before+1 {
			t.Errorf("Cache-Control: %s was answered from the cache", h)
		}
	}
	before := calls()
	get(t, srv.URL+scalarsPath, "Authorization", "Bearer a")
	if n := calls(); n != before {
		t.Errorf("the request after no-cache made a call; want the fresh answer reused")
	}
}

// Every answer says when the reads behind it began, on the server's clock;
// an answer served from the cache says when the answer it reuses was read
// (a live page that got it compares the experiment's update time with
// that, not with when it asked).
func TestAnswersSayWhenTheirReadsBegan(t *testing.T) {
	_, srv := startWith(t, httpapi.Config{CacheTTL: time.Hour})
	readAt := func(resp *http.Response) time.Time {
		t.Helper()
		at, err := time.Parse(time.RFC3339Nano, resp.Header.Get("X-Tbhub-Read-At"))
		if err != nil {
			t.Fatalf("X-Tbhub-Read-At %q: %v", resp.Header.Get("X-Tbhub-Read-At"), err)
		}
		return at
	}
	before := time.Now().Truncate(time.Millisecond)
	first, _ := get(t, srv.URL+scalarsPath, "Authorization", "Bearer a")
	at := readAt(first)
	if at.Before(before) || at.After(time.Now()) {
		t.Errorf("read at %v, want between %v and now", at, before)
	}
	for !time.Now().Truncate(time.Millisecond).After(at) {
		runtime.Gosched() // the next answer is asked for a millisecond later at least
	}
	cached, _ := get(t, srv.URL+scalarsPath, "Authorization", "Bearer a")
	if got := readAt(cached); !got.Equal(at) {
		t.Errorf("cached answer: read at %v, want the first read's %v", got, at)
	}
	fresh, _ := get(t, srv.URL+scalarsPath, "Authorization", "Bearer a", "Cache-Control", "no-cache")
	if got := readAt(fresh); !got.After(at) {
		t.Errorf("answer read past the cache: read at %v, want after %v", got, at)
	}
}

// Identical GETs with the same credential within the TTL cost one call;
// another credential, an error, or a POST is never answered from it.
func TestResponseCache(t *testing.T) {
	fake, srv := startWith(t, httpapi.Config{CacheTTL: time.Hour})
	calls := func() int {
		fake.mu.Lock()
		defer fake.mu.Unlock()
		return fake.calls
	}
	for range 3 {
		if resp, body := get(t, srv.URL+scalarsPath, "Authorization", "Bearer a"); resp.StatusCode != 200 || !strings.Contains(body, "NaN") {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	}
	if n := calls(); n != 1 {
		t.Errorf("3 identical requests made %d calls", n)
	}
	get(t, srv.URL+scalarsPath, "Authorization", "Bearer b")
	get(t, srv.URL+scalarsPath)
	if n := calls(); n != 3 {
		t.Errorf("two more credentials: %d calls in all, want 3", n)
	}
	fake.mu.Lock()
	fake.err = status.Error(codes.NotFound, "experiment not found")
	fake.mu.Unlock()
	path := srv.URL + strings.Replace(scalarsPath, "e1", "e2", 1)
	for range 2 {
		if resp, _ := get(t, path, "Authorization", "Bearer a"); resp.StatusCode != 404 {
			t.Errorf("error answer: %d", resp.StatusCode)
		}
	}
	if n := calls(); n != 5 {
		t.Errorf("errors were cached: %d calls, want 5", n)
	}
	// A cached answer is compressed once and served compressed or not, as
	// each client asks.
	fake.mu.Lock()
	fake.err = nil
	fake.mu.Unlock()
	long := srv.URL + strings.Replace(scalarsPath, "loss", "long", 1)
	r1, b1 := get(t, long, "Accept-Encoding", "gzip")
	r2, b2 := get(t, long, "Accept-Encoding", "gzip")
	r3, b3 := get(t, long)
	if b1 != b2 || b2 != b3 || r2.Header.Get("Content-Encoding") != "gzip" || r3.Header.Get("Content-Encoding") != "" ||
		r1.Header.Get("Content-Type") != r2.Header.Get("Content-Type") {
		t.Errorf("cached long series: encodings %q %q %q, bodies equal %v %v",
			r1.Header.Get("Content-Encoding"), r2.Header.Get("Content-Encoding"), r3.Header.Get("Content-Encoding"), b1 == b2, b2 == b3)
	}
	if n := calls(); n != 6 {
		t.Errorf("long series: %d calls in all, want 6", n)
	}
}

func TestNewValidates(t *testing.T) {
	if _, err := httpapi.New(httpapi.Config{}); err == nil {
		t.Error("New without a data client succeeded")
	}
}

// The optional samples form field of scalars_multirun is the downsample
// asked of the read service; the answer is TensorBoard's {run: points},
// or with format=columns each run's points as three arrays.
// postMultirun posts form to experiment e1's scalars_multirun and returns
// the status and body.
func postMultirun(t *testing.T, base string, form url.Values) (int, string) {
	t.Helper()
	resp, err := http.PostForm(base+"/experiment/e1/data/plugin/scalars/scalars_multirun", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// The buckets, min_step and max_step form fields of scalars_multirun ask
// the read service for a bucketed read (readhint.BucketsKey) over that
// step window, answered in the usual shapes; bad values are 400, and
// without them no hint is sent (TensorBoard's sampling).
func TestScalarsMultirunBuckets(t *testing.T) {
	fake, srv := start(t, nil)
	post := func(form url.Values) (int, string, metadata.MD) {
		t.Helper()
		code, body := postMultirun(t, srv.URL, form)
		fake.mu.Lock()
		defer fake.mu.Unlock()
		hints := fake.hints
		fake.hints = nil
		return code, body, hints
	}
	base := url.Values{"tag": {"loss"}, "runs": {"train"}, "format": {"columns"}}
	with := func(kv ...string) url.Values {
		f := maps.Clone(base)
		for i := 0; i < len(kv); i += 2 {
			f.Set(kv[i], kv[i+1])
		}
		return f
	}
	const (
		listed = `{"train":{"wall_time_base":10.5,"max_wall_time":11.0,"wall_time":[0,0.5],"step":[1,2],"value":["NaN",0.25]}}`
		window = `{"train":{"wall_time_base":10.5,"wall_time":[0,0.5],"step":[1,2],"value":["NaN",0.25]}}`
		tail   = `{"train":{"wall_time_base":11.0,"max_wall_time":11.0,"after":1,"wall_time":[0],"step":[2],"value":[0.25]}}`
	)
	for _, tc := range []struct {
		form  url.Values
		body  string
		hints metadata.MD
	}{
		// The whole series, as a live page reads it (with max_wall_time).
		{with("buckets", "800"), listed, metadata.Pairs(readhint.BucketsKey, "800")},
		// A live page's tail check: the tail passes; had it not, the run
		// would have been read whole, bucketed.
		{with("buckets", "800", "after", `{"train":{"step":1,"wall_time":10.5,"value":null,"max_wall_time":11}}`), tail, metadata.Pairs(readhint.MinStepKey, "1")},
		// A zoom.
		{with("buckets", "800", "min_step", "-5", "max_step", "100"), window, metadata.Pairs(readhint.BucketsKey, "800", readhint.MinStepKey, "-5", readhint.MaxStepKey, "100")},
		{with("buckets", "4000", "max_step", "7"), window, metadata.Pairs(readhint.BucketsKey, "4000", readhint.MaxStepKey, "7")},
		{with(), listed, metadata.MD{}},
	} {
		code, body, hints := post(tc.form)
		if code != 200 || body != tc.body {
			t.Errorf("%v: %d %s, want %s", tc.form, code, body, tc.body)
		}
		if !reflect.DeepEqual(hints, tc.hints) {
			t.Errorf("%v: hints %v, want %v", tc.form, hints, tc.hints)
		}
	}
	for _, bad := range []url.Values{
		with("buckets", "0"), with("buckets", "4001"), with("buckets", "x"), with("buckets", "10", "min_step", "1.5"),
		with("buckets", "10", "max_step", "y"), with("min_step", "5"), with("max_step", "5"),
		with("buckets", "10", "min_step", "9", "max_step", "8"), with("buckets", "10", "min_step", "0", "after", `{"train":{"step":1}}`),
	} {
		if code, body, _ := post(bad); code != 400 {
			t.Errorf("%v: %d %s, want 400", bad, code, body)
		}
	}
}

func TestScalarsMultirunSamples(t *testing.T) {
	fake, srv := start(t, nil)
	post := func(form url.Values) (int, string) {
		t.Helper()
		return postMultirun(t, srv.URL, form)
	}
	for _, tc := range []struct {
		samples string
		want    int64
	}{{"", 1000}, {"300", 300}, {"1", 1}, {"10000", 10000}} {
		form := url.Values{"tag": {"loss"}, "runs": {"train", "eval"}}
		if tc.samples != "" {
			form.Set("samples", tc.samples)
		}
		code, body := post(form)
		if code != 200 || body != `{"train":[[10.5,1,"NaN"],[11.0,2,0.25]]}` {
			t.Errorf("samples=%q: %d %s", tc.samples, code, body)
		}
		fake.mu.Lock()
		got := fake.numPoints
		fake.mu.Unlock()
		if got != tc.want {
			t.Errorf("samples=%q: read %d points per series, want %d", tc.samples, got, tc.want)
		}
	}
	for _, bad := range []string{"0", "-5", "10001", "many"} {
		if code, body := post(url.Values{"tag": {"loss"}, "runs": {"train"}, "samples": {bad}}); code != 400 {
			t.Errorf("samples=%q: %d %s, want 400", bad, code, body)
		}
	}
	if code, body := post(url.Values{"tag": {"loss"}}); code != 200 || body != "{}" {
		t.Errorf("no runs: %d %s", code, body)
	}
	code, body := post(url.Values{"tag": {"long"}, "runs": {"train"}, "format": {"columns"}, "samples": {"3"}})
	if !strings.Contains(body, `"value":[0,1,2,3,`) || code != 200 {
		t.Errorf("format=columns of the long series: %d %.80s", code, body)
	}
	code, body = post(url.Values{"tag": {"loss"}, "runs": {"train"}, "format": {"columns"}})
	if want := `{"train":{"wall_time_base":10.5,"max_wall_time":11.0,"wall_time":[0,0.5],"step":[1,2],"value":["NaN",0.25]}}`; code != 200 || body != want {
		t.Errorf("format=columns: %d %s, want %s", code, body, want)
	}
	var cols map[string]httpapi.ScalarColumns
	if err := json.Unmarshal([]byte(body), &cols); err != nil {
		t.Errorf("format=columns into httpapi.ScalarColumns: %v", err)
	} else if c := cols["train"]; !math.IsNaN(float64(c.Value[0])) || c.Value[1] != 0.25 || c.WallTimeBase+c.WallTime[1] != 11 || c.MaxWallTime != 11 || c.After != nil {
		t.Errorf("format=columns decoded as %+v", c)
	}
	if code, body := post(url.Values{"tag": {"loss"}, "runs": {"train"}, "format": {"csv"}}); code != 400 {
		t.Errorf("format=csv: %d %s, want 400", code, body)
	}
}

// Identical requests that arrive while the first is being answered wait
// for it and share its answer (issue 20 #1): four anonymous readers
// looping over a public experiment's 20 MB run list kept the server's
// cores busy making the same answer, and another user's p99 went from 7 ms
// to 230 ms. Eight concurrent identical requests now make one call.
func TestIdenticalRequestsShareOneAnswer(t *testing.T) {
	fake, h, srv := startHandler(t, httpapi.Config{CacheTTL: time.Hour})
	gate := make(chan struct{})
	fake.mu.Lock()
	fake.gate = gate
	fake.mu.Unlock()
	const n = 8
	bodies := make(chan string, n)
	for range n {
		go func() {
			resp, body := get(t, srv.URL+scalarsPath)
			if resp.StatusCode != http.StatusOK {
				body = resp.Status
			}
			bodies <- body
		}()
	}
	// Every request has either reached the provider or waits for one that has.
	for {
		fake.mu.Lock()
		calls := fake.calls
		fake.mu.Unlock()
		if calls+httpapi.Waiting(h) == n {
			break
		}
		runtime.Gosched()
	}
	close(gate)
	first := <-bodies
	for range n - 1 {
		if b := <-bodies; b != first {
			t.Errorf("answers differ: %q and %q", first, b)
		}
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if fake.calls != 1 {
		t.Errorf("%d identical concurrent requests made %d calls, want 1", n, fake.calls)
	}
}
