package upload

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"

	"github.com/tbhub/tbhub/uploader/eventgen"
	"github.com/tbhub/tbhub/uploader/internal/logdir"
	"github.com/tbhub/tbhub/uploader/internal/state"
)

// appendScalars appends scalar events (and the file version record when
// the file is new) to the event file at path, as a training job would.
func appendScalars(t *testing.T, path, tag string, steps ...int64) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	w := eventgen.NewWriter(f)
	if os.IsNotExist(statErr) {
		if err := w.WriteEvent(&tbpb.Event{WallTime: 1.7e9, What: &tbpb.Event_FileVersion{FileVersion: "brain.Event:2"}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range steps {
		if err := w.WriteEvent(eventgen.Scalar(tag, s, 1.7e9+float64(s), float32(s), eventgen.ScalarMetadata())); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestContinuousUploadReadsNewDataWhenNotified is issue 23's freshness: a
// continuous upload of a local logdir reads what is written (to a file it
// knows, and in a run created after it started) when the file system says
// so, not at its next poll, here an hour away.
func TestContinuousUploadReadsNewDataWhenNotified(t *testing.T) {
	dir := t.TempDir()
	first := filepath.Join(dir, "train", "events.out.tfevents.1.host")
	appendScalars(t, first, "loss", 1)

	srv, w := newFakeServer(t)
	cfg := newConfig(logdir.Local(dir), w, state.New("exp", dir), nil)
	cfg.OneShot = false
	cfg.Poll = time.Hour
	prog := &Progress{}
	cfg.Progress = prog
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- New(cfg).Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	waitFor(t, "the first point", func() bool { return srv.hasPoint("train", "loss", 1) })
	appendScalars(t, first, "loss", 2)
	waitFor(t, "a point appended to a known file (the poll is an hour away)", func() bool { return srv.hasPoint("train", "loss", 2) })
	appendScalars(t, filepath.Join(dir, "eval", "deep", "events.out.tfevents.2.host"), "acc", 7)
	waitFor(t, "a point in a new run (the poll is an hour away)", func() bool { return srv.hasPoint("eval/deep", "acc", 7) })
	if n := prog.Warnings.Load(); n != 0 {
		t.Errorf("%d warnings, want none", n)
	}
}
