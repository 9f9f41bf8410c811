package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	"github.com/tbhub/tbhub/uploader/internal/eventfile"
)

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
