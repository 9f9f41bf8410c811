package logdir

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"
)

// fixture is what the conformance suite puts in a logdir: one run, "train",
// with one event file (what every Source can hold, Memory included).
const (
	fixtureRun  = "train"
	fixtureFile = "events.out.tfevents.1"
)

var fixtureData = []byte("0123456789abcdef")

// sourceUnderTest is a Source holding the fixture, and a way to make its
// event file grow, as a training job appends to it.
type sourceUnderTest struct {
	src  Source
	grow func(t *testing.T, more []byte)
}

// TestSourceConformance runs one suite over every Source: local disk, GCS
// (fake-gcs-server) and memory.
func TestSourceConformance(t *testing.T) {
	for name, open := range map[string]func(t *testing.T) sourceUnderTest{
		"local": func(t *testing.T) sourceUnderTest {
			root := t.TempDir()
			p := filepath.Join(root, fixtureRun, fixtureFile)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, fixtureData, 0o644); err != nil {
				t.Fatal(err)
			}
			src, err := Open(t.Context(), root)
			if err != nil {
				t.Fatal(err)
			}
			return sourceUnderTest{src: src, grow: func(t *testing.T, more []byte) {
				f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				if _, err := f.Write(more); err != nil {
					t.Fatal(err)
				}
			}}
		},
		"gcs": func(t *testing.T) sourceUnderTest {
			name := "logs/" + fixtureRun + "/" + fixtureFile
			obj := func(data []byte) fakestorage.Object {
				return fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: "bkt", Name: name}, Content: data}
			}
			srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{InitialObjects: []fakestorage.Object{obj(fixtureData)}, NoListener: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(srv.Stop)
			data := bytes.Clone(fixtureData)
			return sourceUnderTest{src: NewGCS(srv.Client(), "bkt", "logs"), grow: func(t *testing.T, more []byte) {
				// A GCS object does not grow in place: writers upload it again, longer.
				data = append(data, more...)
				srv.CreateObject(obj(bytes.Clone(data)))
			}}
		},
		"memory": func(t *testing.T) sourceUnderTest {
			m := &Memory{Name: "graph:model.pb", Run: fixtureRun, File: fixtureFile, Data: bytes.Clone(fixtureData)}
			return sourceUnderTest{src: m, grow: func(t *testing.T, more []byte) { m.Data = append(m.Data, more...) }}
		},
	} {
		t.Run(name, func(t *testing.T) { testSource(t, open(t)) })
	}
}

func testSource(t *testing.T, s sourceUnderTest) {
	ctx := context.Background()
	if s.src.String() == "" {
		t.Error("String() is empty")
	}
	runs, err := s.src.Scan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].Name != fixtureRun || len(runs[0].Files) != 1 || runs[0].Files[0].Name != fixtureFile {
		t.Fatalf("Scan = %+v, want run %q with file %q", runs, fixtureRun, fixtureFile)
	}
	f := runs[0].Files[0]
	if f.Size != -1 && f.Size != int64(len(fixtureData)) {
		t.Errorf("listed size %d, want %d or -1 (unknown)", f.Size, len(fixtureData))
	}
	read := func(offset int64) string {
		t.Helper()
		rc, err := s.src.Open(ctx, f.Path, offset)
		if err != nil {
			t.Fatalf("Open(%q, %d): %v", f.Path, offset, err)
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		if err != nil {
			t.Fatalf("reading %q from %d: %v", f.Path, offset, err)
		}
		return string(b)
	}
	for _, off := range []int64{0, 1, 10, int64(len(fixtureData))} {
		if got, want := read(off), string(fixtureData[off:]); got != want {
			t.Errorf("Open at %d read %q, want %q", off, got, want)
		}
	}
	if n, err := s.src.Stat(ctx, f.Path); err != nil || n != int64(len(fixtureData)) {
		t.Errorf("Stat = %d, %v; want %d", n, err, len(fixtureData))
	}

	// The file grows: Stat sees it, and reading on from the old end gets
	// exactly the new bytes (how the uploader follows a live logdir).
	s.grow(t, []byte("ghij"))
	if n, err := s.src.Stat(ctx, f.Path); err != nil || n != int64(len(fixtureData))+4 {
		t.Errorf("Stat after growing = %d, %v; want %d", n, err, len(fixtureData)+4)
	}
	if got := read(int64(len(fixtureData))); got != "ghij" {
		t.Errorf("reading on from the old end: %q, want %q", got, "ghij")
	}

	// A file that is not there is an error, not an empty file.
	missing := f.Path + ".missing"
	if rc, err := s.src.Open(ctx, missing, 0); err == nil {
		rc.Close()
		t.Errorf("Open(%q) succeeded", missing)
	}
	if n, err := s.src.Stat(ctx, missing); err == nil {
		t.Errorf("Stat(%q) = %d, nil; want an error", missing, n)
	}
}
