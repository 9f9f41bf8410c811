// Command fuzzseed builds seed corpora for tbhub's fuzz targets from the
// shared event-file corpus (../shared/corpus), so that each fuzz run in CI
// starts from real TensorBoard data rather than only the few seeds written
// in the tests:
//
//	go run ./uploader/internal/fuzzseed -corpus ../shared/corpus -out "$(go env GOCACHE)/fuzz" \
//	    IMPORTPATH.FuzzTarget ...
//
// It writes files in Go's fuzz corpus format under
// OUT/<package import path>/<FuzzTarget>/, which is where `go test -fuzz`
// looks for its generated corpus (scripts/fuzz.sh runs it, naming every
// target it found). What a target gets depends on its name (seedKinds);
// targets it has no seeds for are left to their own. Seeds are
// inputs, not expectations: nothing here is committed. Inputs that crash a
// target are kept by `go test` in the package's testdata/fuzz instead.
package main

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	"github.com/tbhub/tbhub/uploader/internal/eventfile"
)

const (
	maxSeedsPerTarget = 200
	maxSeedBytes      = 64 << 10
	// fileChunk is how much of each event file FuzzReader gets: a few
	// records, framing and all.
	fileChunk = 16 << 10
)

// What the corpus gives, by the fuzz target's name: the target's
// arguments must be of that kind's types.
const (
	kindFile   = "file"   // ([]byte, int): an event file's head and a buffer size
	kindRecord = "record" // []byte: one event record
	kindTensor = "tensor" // []byte: a serialized TensorProto
	kindGraph  = "graph"  // []byte: a serialized GraphDef or RunMetadata
	kindText   = "text"   // string: a text summary's contents
	// kindScalars is ([]byte, int): one scalar series of a file, 18 bytes
	// a point (the step gap less one, 255 for a larger gap; 1, the value
	// is a float32; the wall time's float64 bits and the value's float32
	// bits in 8 bytes, little-endian), and where to cut it in two.
	kindScalars = "scalars"
)

var seedKinds = map[string]string{
	"FuzzReader":          kindFile,
	"FuzzDecode":          kindRecord,
	"FuzzMatchesProtobuf": kindRecord,
	"FuzzDecodeTensor":    kindTensor,
	"FuzzBuckets":         kindTensor,
	"FuzzPRCurve":         kindTensor,
	"FuzzTextToHTML":      kindTensor,
	"FuzzMarshalGraphDef": kindGraph,
	"FuzzToSafeHTML":      kindText,
	"FuzzChunkRoundTrip":  kindScalars,
}

// seedSet collects a target's seeds, without repeats.
type seedSet struct {
	pkg, target string
	seen        map[string]bool
	seeds       []string // file contents
}

func newSeedSet(pkg, target string) *seedSet {
	return &seedSet{pkg: pkg, target: target, seen: map[string]bool{}}
}

// add records one input of the target's argument types, in Go's corpus
// format; false once the set is full.
func (s *seedSet) add(args ...any) bool {
	if len(s.seeds) >= maxSeedsPerTarget {
		return false
	}
	var b strings.Builder
	b.WriteString("go test fuzz v1\n")
	for _, a := range args {
		switch v := a.(type) {
		case []byte:
			if len(v) > maxSeedBytes {
				return true
			}
			fmt.Fprintf(&b, "[]byte(%s)\n", strconv.Quote(string(v)))
		case string:
			if len(v) > maxSeedBytes {
				return true
			}
			fmt.Fprintf(&b, "string(%s)\n", strconv.Quote(v))
		case int:
			fmt.Fprintf(&b, "int(%d)\n", v)
		default:
			panic(fmt.Sprintf("fuzzseed: no corpus encoding for %T", a))
		}
	}
	if !s.seen[b.String()] {
		s.seen[b.String()] = true
		s.seeds = append(s.seeds, b.String())
	}
	return true
}

func (s *seedSet) write(out string) error {
	dir := filepath.Join(out, filepath.FromSlash(s.pkg), s.target)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, seed := range s.seeds {
		sum := sha256.Sum256([]byte(seed))
		name := "corpus-" + hex.EncodeToString(sum[:8])
		if err := os.WriteFile(filepath.Join(dir, name), []byte(seed), 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("fuzzseed: %3d seeds for %s.%s\n", len(s.seeds), s.pkg, s.target)
	return nil
}

func main() {
	corpus := flag.String("corpus", filepath.Join("..", "shared", "corpus"), "event-file corpus")
	out := flag.String("out", "", "fuzz cache directory (go env GOCACHE, then /fuzz)")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "fuzzseed: -out is required")
		os.Exit(2)
	}
	if err := run(*corpus, *out, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "fuzzseed:", err)
		os.Exit(1)
	}
}

func run(corpus, out string, targets []string) error {
	var files []string
	err := filepath.WalkDir(corpus, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.Contains(d.Name(), "tfevents") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no event files under %s", corpus)
	}
	slices.Sort(files)

	sets := map[string][]*seedSet{} // seed kind -> the targets fed with it
	for _, t := range targets {
		pkg, name, ok := strings.Cut(t, ".Fuzz")
		if !ok {
			return fmt.Errorf("target %q: want IMPORTPATH.FuzzName", t)
		}
		name = "Fuzz" + name
		if kind, ok := seedKinds[name]; ok {
			sets[kind] = append(sets[kind], newSeedSet(pkg, name))
		}
	}
	add := func(kind string, args ...any) {
		for _, s := range sets[kind] {
			s.add(args...)
		}
	}

	perFile := max(2, maxSeedsPerTarget/len(files))
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		head := make([]byte, fileChunk)
		n, _ := io.ReadFull(f, head)
		add(kindFile, head[:n], 4096)
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			f.Close()
			return err
		}
		// Every file gets a share of each set, so the seeds span the corpus's
		// plugins rather than the first files' records.
		records, tensorsHere := 0, 0
		scalars := map[string]*scalarSeed{} // by tag
		r := eventfile.NewReader(f, 0)
		for {
			rec, err := r.Next()
			if err != nil {
				break // EOF, or a damaged tail: the rest of the file is not needed
			}
			if records < perFile {
				records++
				add(kindRecord, rec.Data)
			}
			var ev tbpb.Event
			if proto.Unmarshal(rec.Data, &ev) != nil {
				continue
			}
			if g := ev.GetGraphDef(); len(g) > 0 {
				add(kindGraph, g)
			}
			if m := ev.GetTaggedRunMetadata().GetRunMetadata(); len(m) > 0 {
				add(kindGraph, m)
			}
			for _, v := range ev.GetSummary().GetValue() {
				if x, ok := scalarOf(v); ok {
					if scalars[v.GetTag()] == nil {
						scalars[v.GetTag()] = &scalarSeed{}
					}
					scalars[v.GetTag()].add(ev.GetStep(), ev.GetWallTime(), x)
				}
				if t := v.GetTensor(); t != nil && tensorsHere < perFile {
					if b, err := proto.Marshal(t); err == nil {
						tensorsHere++
						add(kindTensor, b)
					}
					for _, str := range t.GetStringVal() {
						add(kindText, string(str)) // text summaries: markdown
					}
				}
			}
		}
		f.Close()
		for i, tag := range slices.Sorted(maps.Keys(scalars)) {
			if i < perFile {
				add(kindScalars, scalars[tag].data, len(scalars[tag].data)/scalarSeedBytes/2)
			}
		}
	}
	for _, kind := range slices.Sorted(maps.Keys(sets)) {
		for _, s := range sets[kind] {
			if err := s.write(out); err != nil {
				return err
			}
		}
	}
	return nil
}

// scalarSeedBytes is the size of a point in a kindScalars seed.
const scalarSeedBytes = 18

// scalarSeed is a kindScalars seed being built.
type scalarSeed struct {
	data []byte
	step int64
}

func (s *scalarSeed) add(step int64, wallTime float64, value float32) {
	if len(s.data)+scalarSeedBytes > maxSeedBytes {
		return
	}
	var gap byte // 0 for the first point and for a step not above the last
	if d := step - s.step - 1; len(s.data) > 0 && d >= 255 {
		gap = 255
	} else if len(s.data) > 0 && d > 0 {
		gap = byte(d)
	}
	s.data = append(s.data, gap, 1)
	s.data = binary.LittleEndian.AppendUint64(s.data, math.Float64bits(wallTime))
	s.data = binary.LittleEndian.AppendUint64(s.data, uint64(math.Float32bits(value)))
	s.step = step
}

// scalarOf is v's value if v is a float32 scalar: a simple_value, or a
// one-element DT_FLOAT tensor.
func scalarOf(v *tbpb.Summary_Value) (float32, bool) {
	if x, ok := v.GetValue().(*tbpb.Summary_Value_SimpleValue); ok {
		return x.SimpleValue, true
	}
	t := v.GetTensor()
	if t.GetDtype() != tbpb.DataType_DT_FLOAT {
		return 0, false
	}
	if c := t.GetTensorContent(); len(c) == 4 {
		return math.Float32frombits(binary.LittleEndian.Uint32(c)), true
	}
	if len(t.GetFloatVal()) == 1 && len(t.GetTensorContent()) == 0 {
		return t.GetFloatVal()[0], true
	}
	return 0, false
}
