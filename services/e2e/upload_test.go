package e2e_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/tbhub/tbhub/services/internal/blob/gcsblob"
	"github.com/tbhub/tbhub/services/internal/store/spannerstore"
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
func TestUploadCorpusThenExportOnSpannerAndGCS(t *testing.T) {
	db := spanneremu.NewDatabase(t)
	st := spannerstore.New(db.Client, spannerstore.Options{SerializeTransactions: true})
	gcs, err := fakestorage.NewServerWithOptions(fakestorage.Options{NoListener: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gcs.Stop)
	gcs.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: "tbhub-e2e"})
	uploadCorpusThenExport(t, start(t, st, gcsblob.New(gcs.Client(), "tbhub-e2e", gcsblob.Options{Prefix: "e2e"}), "127.0.0.1:0"))
}

func uploadCorpusThenExport(t *testing.T, s *server) {
	corpus := corpusDir(t)
	c := newTbup(t, s)
	first := parseSummary(t, c.run("upload", "--one-shot", "--json", "--logdir", corpus, "--name", "corpus"))
	if first.Scalars == 0 || first.Tensors == 0 || first.Blobs == 0 {
		t.Fatalf("upload sent %+v", first)
	}
	out := t.TempDir()
	c.run("export", "--experiment", first.ExperimentID, "--outdir", out)
	compareWithExpected(t, readExport(t, filepath.Join(out, "experiment_"+first.ExperimentID)), filepath.Join(corpus, "EXPECTED.json"), 200)

	again := parseSummary(t, c.run("upload", "--one-shot", "--json", "--logdir", corpus))
	if again.ExperimentID != first.ExperimentID {
		t.Errorf("second upload went to %s, want the same experiment %s", again.ExperimentID, first.ExperimentID)
	}
	if again.Scalars+again.Tensors+again.Blobs != 0 {
		t.Errorf("second upload of an unchanged logdir sent %+v, want nothing", again)
	}
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
