package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
