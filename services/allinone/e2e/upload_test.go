package e2e_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cloud.google.com/go/storage"
	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/tbhub/tbhub/services/internal/storage/blob/blobtest"
	"github.com/tbhub/tbhub/services/internal/storage/blob/gcsblob"
	"github.com/tbhub/tbhub/services/internal/testenv/fakegcs"
	"github.com/tbhub/tbhub/services/internal/testenv/spanneremu"
	"github.com/tbhub/tbhub/uploader/eventgen"
)

// TestUploadCorpusThenExport: `tbup upload --one-shot` of the whole shared corpus to
// tbhub serve (embedded), then `tbup export`; the export must match EXPECTED.json for
// every series. A second upload of the same logdir continues the same experiment and
// sends nothing.
func TestUploadCorpusThenExport(t *testing.T) {
	uploadCorpusThenExport(t, startEmbedded(t, t.TempDir(), "127.0.0.1:0"))
}

// TestUploadCorpusThenExportOnSpannerAndGCS is the same on Cloud Spanner (the
// official emulator) and GCS (fake-gcs-server).
// fake-gcs-server listens on loopback and the server reaches it as in
// docker-compose.yml: through STORAGE_EMULATOR_HOST, so blobs are read
// through the XML API as on a deployment against the emulator.
func TestUploadCorpusThenExportOnSpannerAndGCS(t *testing.T) {
	db := spanneremu.NewDatabase(t)
	st := db.Store(t)
	uploadCorpusThenExport(t, start(t, st, gcsblob.New(fakeGCS(t, "tbhub-e2e"), "tbhub-e2e", gcsblob.Options{Prefix: "e2e/"}), "127.0.0.1:0"))
}

// fakeGCS starts fake-gcs-server with one bucket and returns a client
// made as tbhub serve makes it.
func fakeGCS(t *testing.T, bucket string) *storage.Client {
	t.Helper()
	fakegcs.Start(t, bucket)
	client, err := gcsblob.NewClient(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	return client
}

func uploadCorpusThenExport(t *testing.T, s *server) {
	corpus := corpusDir(t)
	c := newTbup(t, s)
	first := parseSummary(t, c.run("upload", "--one-shot", "--json", "--logdir", corpus, "--name", "corpus"))
	if first.Scalars == 0 || first.Tensors == 0 || first.Blobs == 0 {
		t.Fatalf("upload sent %+v", first)
	}
	exportMatchesCorpus(t, c, first.ExperimentID, corpus)

	again := parseSummary(t, c.run("upload", "--one-shot", "--json", "--logdir", corpus))
	if again.ExperimentID != first.ExperimentID {
		t.Errorf("second upload went to %s, want the same experiment %s", again.ExperimentID, first.ExperimentID)
	}
	if again.Scalars+again.Tensors+again.Blobs != 0 {
		t.Errorf("second upload of an unchanged logdir sent %+v, want nothing", again)
	}
}

// exportMatchesCorpus exports the experiment with tbup export and compares
// it with the corpus: every series against EXPECTED.json, every blob byte
// for byte against the logdir.
func exportMatchesCorpus(t *testing.T, c *tbup, eid, corpus string) {
	t.Helper()
	out := t.TempDir()
	c.run("export", "--experiment", eid, "--outdir", out)
	exported := filepath.Join(out, "experiment_"+eid)
	compareWithExpected(t, readExport(t, exported), filepath.Join(corpus, "EXPECTED.json"), 200)
	total, _ := expectedBlobs(t, filepath.Join(corpus, "EXPECTED.json"))
	compareBlobsWithLogdir(t, exported, corpus, total)
}

// TestUploadFromGCSLogdir uploads a logdir kept in a bucket (gs://bucket/prefix; a
// fake-gcs-server reached through STORAGE_EMULATOR_HOST) and checks the export.
func TestUploadFromGCSLogdir(t *testing.T) {
	s := startEmbedded(t, t.TempDir(), "127.0.0.1:0")
	c := newTbup(t, s)
	logdir, expected := generated(t, c, eventgen.Spec{Runs: 3, Tags: 4, Steps: 300, Images: 6, ImageBytes: 5000, Seed: 9})
	gcs, err := fakestorage.NewServerWithOptions(fakestorage.Options{Host: "127.0.0.1", Port: 0, Scheme: "http"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gcs.Stop)
	gcs.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: "research"})
	err = filepath.WalkDir(logdir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(logdir, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		gcs.CreateObject(fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: "research", Name: "exp1/logs/" + filepath.ToSlash(rel)}, Content: data})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	c.env = append(c.env, "STORAGE_EMULATOR_HOST="+strings.TrimPrefix(gcs.URL(), "http://"))
	t.Logf("inspect: %s", c.run("inspect", "--logdir", "gs://research/exp1/logs"))
	sum := parseSummary(t, c.run("upload", "--one-shot", "--json", "--logdir", "gs://research/exp1/logs"))
	exportAndCompare(t, c, sum.ExperimentID, expected, 15)
}

// TestUploadRunsWithHostileNames: runs named as researchers name them (issue
// 12's Chinese run name, spaces, "%", emoji, 255-byte directory names, nested)
// upload their images, audio and graphs, and every blob exports byte for
// byte; embedded, and on Spanner with fake-gcs-server.
func TestUploadRunsWithHostileNames(t *testing.T) {
	uploadHostileRuns(t, startEmbedded(t, t.TempDir(), "127.0.0.1:0"), 4)
}

func TestUploadRunsWithHostileNamesOnSpannerAndGCS(t *testing.T) {
	db := spanneremu.NewDatabase(t)
	st := db.Store(t)
	// Two of the names: the emulator takes a second per few blobs.
	uploadHostileRuns(t, start(t, st, gcsblob.New(fakeGCS(t, "hostile"), "hostile", gcsblob.Options{}), "127.0.0.1:0"), 2)
}

func uploadHostileRuns(t *testing.T, s *server, nruns int) {
	corpus := corpusDir(t)
	logdir := t.TempDir()
	sources := []string{"generated/images", "generated/audio", "generated/graph"}
	runs := []string{
		blobtest.IssueRunName,
		"lr 0.001/batch 256 %/50%2F",
		"🚀 run 🔥/第一",
		strings.Repeat("学", 85), // 255 bytes: a file system's longest name
	}[:nruns]
	for _, run := range runs {
		for i, src := range sources {
			dir := filepath.Join(logdir, filepath.FromSlash(run), fmt.Sprint(i))
			if i == 0 {
				dir = filepath.Join(logdir, filepath.FromSlash(run))
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			entries, err := os.ReadDir(filepath.Join(corpus, src))
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				data, err := os.ReadFile(filepath.Join(corpus, src, e.Name()))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, e.Name()), data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	_, expected := expectedBlobs(t, filepath.Join(corpus, "EXPECTED.json"))
	perCopy := 0
	for _, src := range sources {
		perCopy += expected[src]
	}
	c := newTbup(t, s)
	sum := parseSummary(t, c.run("upload", "--one-shot", "--json", "--logdir", logdir, "--name", "hostile"))
	if want := int64(perCopy * len(runs)); sum.Blobs != want {
		t.Errorf("upload sent %d blobs, want %d", sum.Blobs, want)
	}
	out := t.TempDir()
	c.run("export", "--experiment", sum.ExperimentID, "--outdir", out)
	exported := filepath.Join(out, "experiment_"+sum.ExperimentID)
	compareBlobsWithLogdir(t, exported, logdir, perCopy*len(runs))
	perRun := map[string]int{}
	for p, bs := range exportedBlobs(t, exported) {
		perRun[p.run] += len(bs)
	}
	for _, run := range runs {
		for i, src := range sources {
			name := run
			if i > 0 {
				name = fmt.Sprintf("%s/%d", run, i)
			}
			if want := expected[src]; perRun[name] != want {
				t.Errorf("run %q: %d blobs exported, want %d (as %s)", name, perRun[name], want, src)
			}
		}
	}
}
