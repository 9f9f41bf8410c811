package scalarchunk

import (
	"cmp"
	"encoding/binary"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	"github.com/tbhub/tbhub/services/internal/storage/store"
	"github.com/tbhub/tbhub/services/internal/testenv/corpus"
)

// corpusSeries is one scalar series of the shared corpus.
type corpusSeries struct {
	name   string // run/tag
	points []store.ScalarPoint
}

// corpusScalars reads the scalar series of ../shared/corpus: legacy
// simple_value summaries and one-element DT_FLOAT or DT_DOUBLE tensors of
// the scalars plugin, each series in step order, a later point replacing
// an earlier one of the same step. It reads the TFRecord framing without
// checking CRCs and stops a file at its first damaged record: it is a
// source of realistic points, not a reader of event files (the uploader's
// eventfile package is that, and it is internal to the uploader module).
func corpusScalars(tb testing.TB) []corpusSeries {
	tb.Helper()
	root := corpus.Dir(tb)
	series := map[string]map[int64]store.ScalarPoint{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.Contains(d.Name(), "tfevents") || strings.Contains(path, "damaged") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		run, _ := filepath.Rel(root, filepath.Dir(path))
		for len(data) >= 12 {
			n := binary.LittleEndian.Uint64(data)
			if n > uint64(len(data)-16) {
				break
			}
			var ev tbpb.Event
			if proto.Unmarshal(data[12:12+n], &ev) != nil {
				break
			}
			data = data[16+n:]
			for _, v := range ev.GetSummary().GetValue() {
				value, ok := scalarValue(v)
				if !ok {
					continue
				}
				key := run + "/" + v.GetTag()
				if series[key] == nil {
					series[key] = map[int64]store.ScalarPoint{}
				}
				series[key][ev.GetStep()] = store.ScalarPoint{Step: ev.GetStep(), WallTime: ev.GetWallTime(), Value: value}
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	var out []corpusSeries
	for name, byStep := range series {
		s := corpusSeries{name: name}
		for _, p := range byStep {
			s.points = append(s.points, p)
		}
		slices.SortFunc(s.points, func(a, b store.ScalarPoint) int { return cmp.Compare(a.Step, b.Step) })
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b corpusSeries) int { return strings.Compare(a.name, b.name) })
	return out
}

// scalarValue is v's value if v is a scalar summary.
func scalarValue(v *tbpb.Summary_Value) (float64, bool) {
	if _, ok := v.GetValue().(*tbpb.Summary_Value_SimpleValue); ok {
		return float64(v.GetSimpleValue()), true
	}
	t := v.GetTensor()
	if t == nil || v.GetMetadata().GetPluginData().GetPluginName() != "scalars" {
		return 0, false
	}
	switch c := t.GetTensorContent(); {
	case t.GetDtype() == tbpb.DataType_DT_FLOAT && len(c) == 4:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(c))), true
	case t.GetDtype() == tbpb.DataType_DT_DOUBLE && len(c) == 8:
		return math.Float64frombits(binary.LittleEndian.Uint64(c)), true
	case t.GetDtype() == tbpb.DataType_DT_FLOAT && len(t.GetFloatVal()) == 1:
		return float64(t.GetFloatVal()[0]), true
	case t.GetDtype() == tbpb.DataType_DT_DOUBLE && len(t.GetDoubleVal()) == 1:
		return t.GetDoubleVal()[0], true
	}
	return 0, false
}

// TestCorpusRoundTrip encodes every scalar series of the shared corpus in
// chunks and checks that it decodes to the bit.
func TestCorpusRoundTrip(t *testing.T) {
	t.Parallel()
	all := corpusScalars(t)
	if len(all) == 0 {
		t.Fatal("no scalar series in the corpus")
	}
	for _, s := range all {
		for start := 0; start < len(s.points); start += 512 {
			checkRoundTrip(t, s.points[start:min(start+512, len(s.points))])
		}
	}
}
