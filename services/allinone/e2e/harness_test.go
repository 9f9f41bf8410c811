// Package e2e_test runs the uploader researchers use (the tbup binary) against the
// server tbhub serve runs, end to end: upload a logdir, export it back, and compare
// what came back with the corpus's independently computed EXPECTED.json.
package e2e_test

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tbhub/tbhub/services/allinone/readpath"
	"github.com/tbhub/tbhub/services/internal/api/reader"
	"github.com/tbhub/tbhub/services/internal/assembly/serve"
	"github.com/tbhub/tbhub/services/internal/policy/limits"
	"github.com/tbhub/tbhub/services/internal/storage/blob"
	"github.com/tbhub/tbhub/services/internal/storage/blob/fileblob"
	"github.com/tbhub/tbhub/services/internal/storage/store"
	"github.com/tbhub/tbhub/services/internal/storage/store/sqlitestore"
	"github.com/tbhub/tbhub/services/internal/testenv/spanneremu"
)

var tbupBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tbup-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	tbupBin = filepath.Join(dir, "tbup")
	build := exec.Command("go", "build", "-o", tbupBin, "github.com/tbhub/tbhub/uploader/cmd/tbup")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building tbup: %v\n%s", err, out)
		os.Exit(1)
	}
	// One Spanner emulator serves the package; tests fail, not skip, without it.
	code := spanneremu.Main(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

// corpusDir is ../shared/corpus beside the repository root, or $TBHUB_CORPUS.
func corpusDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("TBHUB_CORPUS"); d != "" {
		return d
	}
	wd, _ := os.Getwd()
	for d := wd; filepath.Dir(d) != d; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.work")); err == nil {
			return filepath.Join(d, "..", "shared", "corpus")
		}
	}
	t.Fatal("no go.work above the test; set TBHUB_CORPUS")
	return ""
}

// server is tbhub serve, in this process.
type server struct {
	t       testing.TB
	dir     string
	addr    string
	url     string
	token   string
	st      store.Store
	closers []func() error
	cancel  context.CancelFunc
	done    chan error
}

// startEmbedded serves the embedded store in dir on addr ("127.0.0.1:0" for any
// port). A restart passes the same dir and the address the first start got.
func startEmbedded(t testing.TB, dir, addr string) *server {
	t.Helper()
	st, err := sqlitestore.Open(context.Background(), filepath.Join(dir, sqlitestore.DefaultFile), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	blobs, err := fileblob.Open(filepath.Join(dir, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, st, blobs, addr, st.Close, blobs.Close)
	s.dir = dir
	return s
}

// start serves st and blobs; closers run when the server stops.
func start(t testing.TB, st store.Store, blobs blob.Store, addr string, closers ...func() error) *server {
	t.Helper()
	ctx := context.Background()
	lim := limits.Default()
	lim.RequestsPerSecond = 0
	var srv *serve.Server
	var err error
	for attempt := 0; ; attempt++ { // a restart may find the port still closing
		srv, err = serve.New(st, blobs, serve.Config{HTTPAddr: addr, Limits: lim, SweepInterval: -1})
		if err == nil || attempt == 50 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	token, err := serve.IssueUserToken(ctx, st, srv.Authenticator(), "researcher", "e2e")
	if err != nil {
		t.Fatal(err)
	}
	// The read path, mounted as tbhub serve mounts it.
	loop, err := grpc.NewClient(srv.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	closers = append(closers, loop.Close)
	if _, _, err := readpath.Mount(srv.GRPCServer(), srv.Mux(), loop, st, blobs, readpath.Config{Reader: reader.Config{BlobKeySecret: reader.RandomSecret()}}); err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	s := &server{t: t, url: srv.Origin(), token: token, st: st, closers: closers, cancel: cancel, done: make(chan error, 1)}
	s.addr = strings.TrimPrefix(s.url, "http://")
	go func() { s.done <- srv.Serve(runCtx) }()
	t.Cleanup(s.stop)
	return s
}

func (s *server) stop() {
	if s.cancel == nil {
		return
	}
	s.cancel()
	if err := <-s.done; err != nil {
		s.t.Errorf("serve: %v", err)
	}
	for _, c := range s.closers {
		c()
	}
	s.cancel = nil
}

// tbup runs the uploader with its own state and config directories.
type tbup struct {
	t     testing.TB
	home  string
	token string
	url   string
	env   []string // extra environment
}

func newTbup(t testing.TB, s *server) *tbup {
	return &tbup{t: t, home: t.TempDir(), token: s.token, url: s.url}
}

func (c *tbup) cmd(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, tbupBin, args...)
	cmd.Env = append(os.Environ(),
		"TBUP_SERVER="+c.url, "TBUP_TOKEN="+c.token,
		"TBUP_STATE_DIR="+filepath.Join(c.home, "state"), "TBUP_CONFIG_DIR="+filepath.Join(c.home, "config"))
	cmd.Env = append(cmd.Env, c.env...)
	return cmd
}

// run runs tbup to completion and returns stdout, failing the test on error.
func (c *tbup) run(args ...string) string {
	c.t.Helper()
	var out, errOut bytes.Buffer
	cmd := c.cmd(context.Background(), args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		c.t.Fatalf("tbup %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out.String(), errOut.String())
	}
	return out.String()
}

type uploadSummary struct {
	ExperimentID string `json:"experiment_id"`
	URL          string `json:"url"`
	Scalars      int64  `json:"scalars"`
	Tensors      int64  `json:"tensors"`
	Blobs        int64  `json:"blobs"`
	BlobBytes    int64  `json:"blob_bytes"`
}

func parseSummary(t testing.TB, out string) uploadSummary {
	t.Helper()
	var s uploadSummary
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &s); err != nil || s.ExperimentID == "" {
		t.Fatalf("tbup --json printed %q: %v", out, err)
	}
	return s
}

// series is one exported series, reduced to what EXPECTED.json says about it.
type series struct {
	class     string
	steps     []int64
	values    []any // scalars: float64 or "NaN"/"Infinity"/"-Infinity"
	dtype     string
	shape     []int64
	blobs     int
	blobBytes int64
	maxLength int
}

// readExport loads tbup export's layout.
func readExport(t testing.TB, dir string) map[string]map[string]*series {
	t.Helper()
	out := map[string]map[string]*series{}
	add := func(run, tag string, s *series) {
		if out[run] == nil {
			out[run] = map[string]*series{}
		}
		if out[run][tag] != nil {
			t.Errorf("series %s/%s exported twice", run, tag)
		}
		out[run][tag] = s
	}
	type line struct {
		Run    string `json:"run"`
		Tag    string `json:"tag"`
		Points struct {
			Steps         []int64    `json:"steps"`
			Values        []any      `json:"values"`
			TensorsFile   string     `json:"tensors_file_path"`
			BlobFilePaths [][]string `json:"blob_file_paths"`
		} `json:"points"`
	}
	for _, kind := range []string{"scalars", "tensors", "blob_sequences"} {
		f, err := os.Open(filepath.Join(dir, kind+".json"))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 256<<20)
		for sc.Scan() {
			var l line
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Fatalf("%s.json: %v", kind, err)
			}
			s := &series{class: kind, steps: l.Points.Steps, values: l.Points.Values}
			switch kind {
			case "tensors":
				s.dtype, s.shape = lastArray(t, filepath.Join(dir, l.Points.TensorsFile), len(l.Points.Steps))
			case "blob_sequences":
				for _, paths := range l.Points.BlobFilePaths {
					s.maxLength = max(s.maxLength, len(paths))
					for _, p := range paths {
						fi, err := os.Stat(filepath.Join(dir, p))
						if err != nil {
							t.Fatalf("blob file: %v", err)
						}
						s.blobs++
						s.blobBytes += fi.Size()
					}
				}
			}
			add(l.Run, l.Tag, s)
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

var descrDTypes = map[string]string{"<f4": "DT_FLOAT", "<f8": "DT_DOUBLE", "<f2": "DT_HALF", "|i1": "DT_INT8", "<i2": "DT_INT16",
	"<i4": "DT_INT32", "<i8": "DT_INT64", "|u1": "DT_UINT8", "<u2": "DT_UINT16", "<u4": "DT_UINT32", "<u8": "DT_UINT64", "|b1": "DT_BOOL"}

var npyHeader = regexp.MustCompile(`'descr': '([^']*)'.*'shape': \(([^)]*)\)`)

// lastArray reads the dtype and shape of the last array of an .npz archive.
func lastArray(t testing.TB, path string, n int) (string, []int64) {
	t.Helper()
	z, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	if len(z.File) != n {
		t.Fatalf("%s holds %d arrays for %d steps", path, len(z.File), n)
	}
	rc, err := z.Open(fmt.Sprintf("arr_%d.npy", n-1))
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	head := make([]byte, 10)
	if _, err := rc.Read(head); err != nil {
		t.Fatal(err)
	}
	hdr := make([]byte, binary.LittleEndian.Uint16(head[8:]))
	if _, err := rc.Read(hdr); err != nil {
		t.Fatal(err)
	}
	m := npyHeader.FindStringSubmatch(string(hdr))
	if m == nil {
		t.Fatalf("npy header %q", hdr)
	}
	dtype := descrDTypes[m[1]]
	if strings.HasPrefix(m[1], "|S") {
		dtype = "DT_STRING"
	}
	shape := []int64{}
	for _, d := range strings.Split(m[2], ",") {
		if d = strings.TrimSpace(d); d != "" {
			v, _ := strconv.ParseInt(d, 10, 64)
			shape = append(shape, v)
		}
	}
	return dtype, shape
}

// compareWithExpected checks an export against EXPECTED.json: every series, its
// points (distinct steps, none twice), step range, scalar sums and special values,
// tensor dtype and shape, blob counts and bytes.
func compareWithExpected(t testing.TB, got map[string]map[string]*series, expectedPath string, minSeries int) {
	t.Helper()
	raw, err := os.ReadFile(expectedPath)
	if err != nil {
		t.Fatal(err)
	}
	var exp struct {
		Runs map[string]map[string]map[string]any `json:"runs"`
	}
	if err := json.Unmarshal(raw, &exp); err != nil {
		t.Fatal(err)
	}
	var diffs []string
	diff := func(format string, args ...any) { diffs = append(diffs, fmt.Sprintf(format, args...)) }
	nseries := 0
	for run, tags := range exp.Runs {
		for tag, want := range tags {
			nseries++
			s := got[run][tag]
			if s == nil {
				diff("%s/%s: not exported", run, tag)
				continue
			}
			class := map[string]string{"scalar": "scalars", "tensor": "tensors", "blob_sequence": "blob_sequences"}[want["data_class"].(string)]
			if s.class != class {
				diff("%s/%s: exported as %s, want %s", run, tag, s.class, class)
				continue
			}
			seen := map[int64]bool{}
			for _, st := range s.steps {
				if seen[st] {
					diff("%s/%s: step %d stored twice", run, tag, st)
				}
				seen[st] = true
			}
			if n := len(s.steps); n != int(want["points"].(float64)) {
				diff("%s/%s: %d points, want %v", run, tag, n, want["points"])
				continue
			}
			if !sort.SliceIsSorted(s.steps, func(i, j int) bool { return s.steps[i] < s.steps[j] }) {
				diff("%s/%s: steps out of order", run, tag)
			}
			if s.steps[0] != int64(want["min_step"].(float64)) || s.steps[len(s.steps)-1] != int64(want["max_step"].(float64)) {
				diff("%s/%s: steps %d..%d, want %v..%v", run, tag, s.steps[0], s.steps[len(s.steps)-1], want["min_step"], want["max_step"])
			}
			switch class {
			case "scalars":
				compareScalars(run, tag, s, want, diff)
			case "tensors":
				var shape []int64
				for _, d := range want["shape"].([]any) {
					shape = append(shape, int64(d.(float64)))
				}
				if s.dtype != want["dtype"] || fmt.Sprint(s.shape) != fmt.Sprint(shape) {
					diff("%s/%s: last tensor %s %v, want %v %v", run, tag, s.dtype, s.shape, want["dtype"], shape)
				}
			case "blob_sequences":
				if s.blobs != int(want["blobs"].(float64)) || s.blobBytes != int64(want["blob_bytes"].(float64)) || s.maxLength != int(want["max_length"].(float64)) {
					diff("%s/%s: %d blobs, %d bytes, max length %d; want %v, %v, %v", run, tag, s.blobs, s.blobBytes, s.maxLength, want["blobs"], want["blob_bytes"], want["max_length"])
				}
			}
		}
	}
	for run, tags := range got {
		for tag := range tags {
			if exp.Runs[run][tag] == nil {
				diff("%s/%s: exported but not expected", run, tag)
			}
		}
	}
	if nseries < minSeries {
		diff("only %d expected series, want at least %d: wrong expectations?", nseries, minSeries)
	}
	if len(diffs) > 0 {
		sort.Strings(diffs)
		t.Errorf("%d differences from EXPECTED.json:\n%s", len(diffs), strings.Join(diffs, "\n"))
	}
}

func compareScalars(run, tag string, s *series, want map[string]any, diff func(string, ...any)) {
	var sum float64
	counts := map[string]int{}
	for _, v := range s.values {
		switch v := v.(type) {
		case float64:
			sum += v
		case string:
			counts[v]++
		}
	}
	if counts["NaN"] != int(want["nan"].(float64)) || counts["Infinity"] != int(want["pos_inf"].(float64)) || counts["-Infinity"] != int(want["neg_inf"].(float64)) {
		diff("%s/%s: special values %v, want nan %v +inf %v -inf %v", run, tag, counts, want["nan"], want["pos_inf"], want["neg_inf"])
	}
	if ws, ok := want["sum"].(float64); ok && math.Abs(sum-ws) > 1e-9*math.Max(1, math.Abs(ws)) {
		diff("%s/%s: sum %v, want %v", run, tag, sum, ws)
	}
	if last := s.values[len(s.values)-1]; fmt.Sprint(last) != fmt.Sprint(want["last"]) {
		if lf, ok := last.(float64); !ok || math.Abs(lf-want["last"].(float64)) > 1e-12*math.Max(1, math.Abs(lf)) {
			diff("%s/%s: last %v, want %v", run, tag, last, want["last"])
		}
	}
}
