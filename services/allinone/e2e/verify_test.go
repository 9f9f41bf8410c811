package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/tbhub/tbhub/uploader/eventgen"
)

// verify runs `tbup verify` and returns its exit code and output.
func (c *tbup) verify(logdir, eid string) (int, string) {
	c.t.Helper()
	var out, errOut bytes.Buffer
	cmd := c.cmd(context.Background(), "verify", "--logdir", logdir, "--experiment", eid)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String() + errOut.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), out.String() + errOut.String()
	}
	c.t.Fatalf("tbup verify: %v", err)
	return 0, ""
}

// TestVerifyCorpus: after an upload of the whole corpus, `tbup verify`
// finds every series, point, tensor and blob on the server as in the
// logdir, and exits 0.
func TestVerifyCorpus(t *testing.T) {
	s := startEmbedded(t, t.TempDir(), "127.0.0.1:0")
	c := newTbup(t, s)
	corpus := corpusDir(t)
	sum := parseSummary(t, c.run("upload", "--one-shot", "--json", "--logdir", corpus, "--name", "corpus"))
	code, out := c.verify(corpus, sum.ExperimentID)
	var expected struct {
		Runs map[string]json.RawMessage `json:"runs"`
	}
	raw, err := os.ReadFile(filepath.Join(corpus, "EXPECTED.json"))
	must(t, err)
	must(t, json.Unmarshal(raw, &expected))
	// Every run, the four with no data among them, with its start time.
	if want := fmt.Sprintf("Identical: %d runs, ", len(expected.Runs)); code != 0 || !strings.Contains(out, want) {
		t.Fatalf("tbup verify of an identical upload exited %d, want 0 and %q:\n%s", code, want, out)
	}
}

// TestVerifyFindsDifferences: a point changed and one added in the logdir
// after the upload, a blob object corrupted and another one deleted on the
// server:
// `tbup verify` names each and exits non-zero.
func TestVerifyFindsDifferences(t *testing.T) {
	dir := t.TempDir()
	s := startEmbedded(t, dir, "127.0.0.1:0")
	c := newTbup(t, s)
	logdir := t.TempDir()
	file := filepath.Join(logdir, "train", "events.out.tfevents.1")
	w, err := eventgen.Create(file, 1.7e9)
	if err != nil {
		t.Fatal(err)
	}
	img := func(seed byte) []byte { return bytes.Repeat([]byte{seed, 1, 2, 3}, 500) }
	for step := range int64(5) {
		md := eventgen.ScalarMetadata()
		if step > 0 {
			md = nil
		}
		must(t, w.WriteEvent(eventgen.Scalar("loss", step, 1.7e9+float64(step), float32(step)/2, md)))
		must(t, w.WriteEvent(eventgen.Image("sample", step, 1.7e9+float64(step), 8, 8, img(byte(step)))))
	}
	must(t, w.Close())
	// upload --verify checks right after the upload (and keeps stdout to
	// the JSON summary).
	sum := parseSummary(t, c.run("upload", "--one-shot", "--json", "--verify", "--logdir", logdir))

	// The logdir changes: step 2 of loss is written again with another value.
	w, err = eventgen.Append(file)
	if err != nil {
		t.Fatal(err)
	}
	must(t, w.WriteEvent(eventgen.Scalar("loss", 2, 1.7e9+2, 99, nil)))
	must(t, w.WriteEvent(eventgen.Scalar("loss", 5, 1.7e9+5, 3, nil))) // a step not uploaded yet
	must(t, w.Close())
	// A run starts writing: only its file_version event so far.
	w, err = eventgen.Create(filepath.Join(logdir, "eval", "events.out.tfevents.2"), 1.8e9)
	must(t, err)
	must(t, w.Close())
	// The server loses blobs: one object's bytes change, another disappears.
	var objects []string
	must(t, filepath.WalkDir(filepath.Join(dir, "blobs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, ierr := d.Info(); ierr == nil && info.Size() > 2000 { // the images, not width and height
				objects = append(objects, p)
			}
		}
		return err
	}))
	sort.Strings(objects)
	if len(objects) != 5 {
		t.Fatalf("found %d image objects in the blob folder, want 5: %v", len(objects), objects)
	}
	// The objects sort by step: flip a byte of step 0's image, delete step 1's.
	data, err := os.ReadFile(objects[0])
	must(t, err)
	data[len(data)/2] ^= 0xff
	must(t, os.WriteFile(objects[0], data, 0o600))
	must(t, os.Remove(objects[1]))

	code, out := c.verify(logdir, sum.ExperimentID)
	t.Logf("tbup verify:\n%s", out)
	if code != 1 {
		t.Errorf("verify after the changes exited %d, want 1:\n%s", code, out)
	}
	for _, want := range []string{
		"train/loss: step 2: value 1 on the server, 99 in the logdir",
		"train/sample: step 0: blob 2: ",
		"train/sample: step 1: blob 2: cannot be read",
		"train/loss: step 5 is missing on the server",
		"run eval: missing on the server",
		"5 differences over 2 runs",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("verify output lacks %q:\n%s", want, out)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
