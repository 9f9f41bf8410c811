package logdir

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"
)

func names(runs []Run) map[string][]string {
	out := map[string][]string{}
	for _, r := range runs {
		for _, f := range r.Files {
			out[r.Name] = append(out[r.Name], f.Name)
		}
	}
	return out
}

func TestLocalRunDiscovery(t *testing.T) {
	root := t.TempDir()
	touch := func(p string) {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	touch("events.out.tfevents.2")
	touch("events.out.tfevents.10") // code-point order: "1" < "2"
	touch("train/b/events.out.tfevents.1")
	touch("train/notes.txt")
	touch("eval/x.tfevents/inner.txt") // a directory named like an event file is not one
	touch("odd name ü/tfevents")
	touch("outside/events.out.tfevents.9")
	if err := os.Symlink(filepath.Join(root, "outside"), filepath.Join(root, "linked_dir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "outside", "events.out.tfevents.9"), filepath.Join(root, "train", "events.linked.tfevents")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "missing"), filepath.Join(root, "train", "broken.tfevents")); err != nil {
		t.Fatal(err)
	}
	src, err := Open(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := src.Scan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		".":          {"events.out.tfevents.10", "events.out.tfevents.2"},
		"odd name ü": {"tfevents"},
		"outside":    {"events.out.tfevents.9"},
		"train":      {"events.linked.tfevents"},
		"train/b":    {"events.out.tfevents.1"},
	}
	if got := names(runs); !reflect.DeepEqual(got, want) {
		t.Errorf("runs:\n got %v\nwant %v", got, want)
	}
	if _, err := Open(context.Background(), filepath.Join(root, "nope")); err == nil {
		t.Error("a missing logdir opened without error")
	}
}

func TestGCSRunDiscoveryAndRangeReads(t *testing.T) {
	objs := []fakestorage.Object{}
	for _, name := range []string{"logs/events.out.tfevents.1", "logs/a/events.out.tfevents.2", "logs/a/b/events.out.tfevents.3", "logs/a/readme.md", "other/events.out.tfevents.9", "logs/dir/"} {
		objs = append(objs, fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: "bkt", Name: name}, Content: []byte("0123456789")})
	}
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{InitialObjects: objs, NoListener: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	src := NewGCS(srv.Client(), "bkt", "logs/")
	if src.String() != "gs://bkt/logs" {
		t.Errorf("String() = %q", src.String())
	}
	runs, err := src.Scan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{".": {"events.out.tfevents.1"}, "a": {"events.out.tfevents.2"}, "a/b": {"events.out.tfevents.3"}}
	if got := names(runs); !reflect.DeepEqual(got, want) {
		t.Errorf("runs %v, want %v", got, want)
	}
	rc, err := src.Open(context.Background(), runs[1].Files[0].Path, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if b, _ := io.ReadAll(rc); string(b) != "456789" {
		t.Errorf("range read from 4 = %q", b)
	}
	if b, p, err := ParseGCSURL("gs://bucket"); err != nil || b != "bucket" || p != "" {
		t.Errorf("ParseGCSURL: %q %q %v", b, p, err)
	}
}
