package e2e_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
)

// blobPoint names the blobs of one step of one series.
type blobPoint struct {
	run, tag string
	step     int64
}

// logdirBlobs reads every event file of logdir, independently of tbup, and
// returns for each (run, tag, step) every byte string that may be one of
// its blobs: a graph_def (tag __run_graph__), a tagged run metadata, a
// legacy image's width, height and encoding, a legacy audio clip, and each
// string of a tensor. A step written more than once contributes all its
// writes. Runs are the directories holding a file whose name contains
// "tfevents" (EXPECTED.json's rule), named by their path relative to
// logdir.
func logdirBlobs(t testing.TB, logdir string) map[blobPoint][][]byte {
	t.Helper()
	out := map[blobPoint][][]byte{}
	add := func(p blobPoint, b []byte) { out[p] = append(out[p], b) }
	err := filepath.WalkDir(logdir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.Contains(d.Name(), "tfevents") {
			return err
		}
		if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(logdir, filepath.Dir(path))
		if err != nil {
			return err
		}
		run := filepath.ToSlash(rel)
		return eachEvent(path, func(e *tbpb.Event) {
			step := e.GetStep()
			if _, ok := e.GetWhat().(*tbpb.Event_GraphDef); ok {
				add(blobPoint{run, "__run_graph__", step}, e.GetGraphDef())
			}
			if m := e.GetTaggedRunMetadata(); m != nil {
				add(blobPoint{run, m.GetTag(), step}, m.GetRunMetadata())
			}
			for _, v := range e.GetSummary().GetValue() {
				p := blobPoint{run, v.GetTag(), step}
				if img := v.GetImage(); img != nil {
					add(p, []byte(strconv.Itoa(int(img.GetWidth()))))
					add(p, []byte(strconv.Itoa(int(img.GetHeight()))))
					add(p, img.GetEncodedImageString())
				}
				if a := v.GetAudio(); a != nil {
					add(p, a.GetEncodedAudioString())
				}
				for _, s := range v.GetTensor().GetStringVal() {
					add(p, s)
				}
			}
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// eachEvent calls fn with every event of a TFRecord file it can parse,
// stopping at a truncated record (checksums are not checked: a damaged
// record only adds candidates).
func eachEvent(path string, fn func(*tbpb.Event)) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	for len(data) >= 12 {
		n := binary.LittleEndian.Uint64(data)
		if n > uint64(len(data)-12) || uint64(len(data)-12)-n < 4 {
			return nil
		}
		e := &tbpb.Event{}
		if proto.Unmarshal(data[12:12+n], e) == nil {
			fn(e)
		}
		data = data[12+n+4:]
	}
	return nil
}

// exportedBlobs reads the blobs of tbup export's blob_sequences.json, in
// order, for each (run, tag, step).
func exportedBlobs(t testing.TB, dir string) map[blobPoint][][]byte {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "blob_sequences.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[blobPoint][][]byte{}
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var l struct {
				Run    string `json:"run"`
				Tag    string `json:"tag"`
				Points struct {
					Steps         []int64    `json:"steps"`
					BlobFilePaths [][]string `json:"blob_file_paths"`
				} `json:"points"`
			}
			if err := json.Unmarshal(line, &l); err != nil {
				t.Fatalf("blob_sequences.json: %v", err)
			}
			for i, step := range l.Points.Steps {
				p := blobPoint{l.Run, l.Tag, step}
				out[p] = [][]byte{}
				for _, path := range l.Points.BlobFilePaths[i] {
					b, err := os.ReadFile(filepath.Join(dir, path))
					if err != nil {
						t.Fatal(err)
					}
					out[p] = append(out[p], b)
				}
			}
		}
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// compareBlobsWithLogdir checks every exported blob byte for byte: each
// one must be a distinct one of the byte strings the logdir holds for its
// run, tag and step, and there must be at least minBlobs. With
// EXPECTED.json's counts and sizes per series (compareWithExpected) that
// leaves no room for a blob that is missing or differs.
func compareBlobsWithLogdir(t testing.TB, exportDir, logdir string, minBlobs int) {
	t.Helper()
	want := logdirBlobs(t, logdir)
	got := exportedBlobs(t, exportDir)
	var diffs []string
	blobs := 0
	for p, bs := range got {
		pool := slices.Clone(want[p])
		for i, b := range bs {
			blobs++
			j := slices.IndexFunc(pool, func(c []byte) bool { return bytes.Equal(c, b) })
			if j < 0 {
				diffs = append(diffs, fmt.Sprintf("%s/%s step %d blob %d (%d bytes): not in the logdir", p.run, p.tag, p.step, i, len(b)))
				continue
			}
			pool = slices.Delete(pool, j, j+1)
		}
	}
	if blobs < minBlobs {
		diffs = append(diffs, fmt.Sprintf("only %d blobs exported, want at least %d", blobs, minBlobs))
	}
	if len(diffs) > 0 {
		sort.Strings(diffs)
		t.Errorf("%d exported blobs differ from the logdir:\n%s", len(diffs), strings.Join(diffs, "\n"))
	}
}

// expectedBlobs is what EXPECTED.json says of blobs: the total, and the
// number in each run.
func expectedBlobs(t testing.TB, path string) (total int, perRun map[string]int) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var exp struct {
		Totals struct {
			Blobs *int `json:"blobs"`
		} `json:"totals"`
		Runs map[string]map[string]struct {
			Blobs int `json:"blobs"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(raw, &exp); err != nil {
		t.Fatal(err)
	}
	if exp.Totals.Blobs == nil {
		t.Fatalf("%s has no total of blobs", path)
	}
	perRun = map[string]int{}
	for run, series := range exp.Runs {
		for _, s := range series {
			perRun[run] += s.Blobs
		}
	}
	return *exp.Totals.Blobs, perRun
}
