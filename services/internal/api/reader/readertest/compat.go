package readertest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	datapb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/data"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// RunCompat drives a read service the way TensorBoard's GrpcDataProvider
// does (reference §1.3 and §1.5) and checks its answers: the latest scalar
// read with num_points = 1, absent and empty run/tag filters, downsample
// validation, runs by start time, series listing, blob keys from
// ReadBlobSequences read back through ReadBlob in several chunks. newEnv
// must return a fresh service whose BlobChunkBytes is small (a few bytes)
// so that chunking is exercised.
func RunCompat(t *testing.T, newEnv func(t *testing.T) *Env) {
	env := newEnv(t)
	owner, token := env.User(t, "owner")
	eid := env.Experiment(t, owner, store.VisibilityPrivate)
	ctx := WithToken(context.Background(), token)

	// Two runs; "b" starts earlier than "a".
	var points []store.ScalarPoint
	for i := range 50 {
		points = append(points, store.ScalarPoint{Step: int64(i * 10), WallTime: 2000 + float64(i), Value: float64(i) / 2})
	}
	env.Scalars(t, eid, "a", "loss", points)
	env.Scalars(t, eid, "a", "acc", points[:5])
	env.Scalars(t, eid, "b", "loss", []store.ScalarPoint{{Step: 1, WallTime: 1000, Value: 7}})
	hist := Series("a", "weights", "histograms", store.DataClassTensor, nil)
	env.Tensors(t, eid, hist, []int64{0, 5}, []float64{2000, 2001}, []*tbpb.TensorProto{
		{Dtype: tbpb.DataType_DT_DOUBLE, TensorShape: shape(1, 3), DoubleVal: []float64{0, 1, 4}},
		{Dtype: tbpb.DataType_DT_DOUBLE, TensorShape: shape(1, 3), DoubleVal: []float64{0, 2, 9}},
	})
	img := Series("b", "digits", "images", store.DataClassBlobSequence, nil)
	env.BlobSequence(t, eid, img, 3, 1001, [][]byte{[]byte("2"), []byte("1"), []byte("pixels-of-step-3")})
	env.BlobSequence(t, eid, img, 4, 1002, [][]byte{[]byte("2"), []byte("1"), []byte("step-4 pixels, a bit longer"), {}})

	c := env.Client
	scalars := &datapb.PluginFilter{PluginName: "scalars"}

	t.Run("ListRunsByStartTime", func(t *testing.T) {
		resp, err := c.ListRuns(ctx, &datapb.ListRunsRequest{ExperimentId: eid})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, r := range resp.GetRuns() {
			names = append(names, r.GetName())
		}
		if !slices.Equal(names, []string{"b", "a"}) || resp.GetRuns()[0].GetStartTime() != 1000 {
			t.Errorf("ListRuns = %v", resp.GetRuns())
		}
	})

	t.Run("ListPlugins", func(t *testing.T) {
		resp, err := c.ListPlugins(ctx, &datapb.ListPluginsRequest{ExperimentId: eid})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, p := range resp.GetPlugins() {
			names = append(names, p.GetName())
		}
		if !slices.Equal(names, []string{"histograms", "images", "scalars"}) {
			t.Errorf("ListPlugins = %v", names)
		}
	})

	t.Run("GetExperiment", func(t *testing.T) {
		resp, err := c.GetExperiment(ctx, &datapb.GetExperimentRequest{ExperimentId: eid})
		if err != nil {
			t.Fatal(err)
		}
		if resp.GetName() == "" || resp.GetDescription() == "" || resp.GetDataLocation() == "" || resp.GetCreationTime() == nil {
			t.Errorf("GetExperiment = %v", resp)
		}
	})

	t.Run("LastScalarWithOnePoint", func(t *testing.T) {
		resp, err := c.ReadScalars(ctx, &datapb.ReadScalarsRequest{
			ExperimentId: eid, PluginFilter: scalars,
			RunTagFilter: &datapb.RunTagFilter{Tags: &datapb.TagFilter{Names: []string{"loss"}}},
			Downsample:   &datapb.Downsample{NumPoints: 1},
		})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string][]float32{}
		for _, r := range resp.GetRuns() {
			for _, tg := range r.GetTags() {
				got[r.GetRunName()+"/"+tg.GetTagName()] = tg.GetData().GetValue()
				if d := tg.GetData(); len(d.GetStep()) != 1 || len(d.GetWallTime()) != 1 {
					t.Errorf("%s/%s: %v", r.GetRunName(), tg.GetTagName(), d)
				}
			}
		}
		want := map[string][]float32{"a/loss": {24.5}, "b/loss": {7}}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("last scalars = %v, want %v", got, want)
		}
	})

	t.Run("DownsampleKeepsLatestAndOrder", func(t *testing.T) {
		resp, err := c.ReadScalars(ctx, &datapb.ReadScalarsRequest{
			ExperimentId: eid, PluginFilter: scalars,
			RunTagFilter: &datapb.RunTagFilter{Runs: &datapb.RunFilter{Names: []string{"a"}}, Tags: &datapb.TagFilter{Names: []string{"loss"}}},
			Downsample:   &datapb.Downsample{NumPoints: 7},
		})
		if err != nil {
			t.Fatal(err)
		}
		d := resp.GetRuns()[0].GetTags()[0].GetData()
		if len(d.GetStep()) != 7 || d.GetStep()[6] != 490 || !slices.IsSorted(d.GetStep()) {
			t.Errorf("steps = %v", d.GetStep())
		}
		// The same request gives the same steps (deterministic).
		again, err := c.ReadScalars(ctx, &datapb.ReadScalarsRequest{
			ExperimentId: eid, PluginFilter: scalars,
			RunTagFilter: &datapb.RunTagFilter{Runs: &datapb.RunFilter{Names: []string{"a"}}, Tags: &datapb.TagFilter{Names: []string{"loss"}}},
			Downsample:   &datapb.Downsample{NumPoints: 7},
		})
		if err != nil || !slices.Equal(again.GetRuns()[0].GetTags()[0].GetData().GetStep(), d.GetStep()) {
			t.Errorf("second read differs: %v, %v", again, err)
		}
	})

	t.Run("AbsentAndEmptyFilters", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			rtf  *datapb.RunTagFilter
			want []string
		}{
			{"absent", nil, []string{"a/acc", "a/loss", "b/loss"}},
			{"absent runs and tags", &datapb.RunTagFilter{}, []string{"a/acc", "a/loss", "b/loss"}},
			{"empty runs", &datapb.RunTagFilter{Runs: &datapb.RunFilter{}}, nil},
			{"empty tags", &datapb.RunTagFilter{Tags: &datapb.TagFilter{}}, nil},
			{"runs only", &datapb.RunTagFilter{Runs: &datapb.RunFilter{Names: []string{"b", "zzz"}}}, []string{"b/loss"}},
			{"tags only", &datapb.RunTagFilter{Tags: &datapb.TagFilter{Names: []string{"acc"}}}, []string{"a/acc"}},
		} {
			list, err := c.ListScalars(ctx, &datapb.ListScalarsRequest{ExperimentId: eid, PluginFilter: scalars, RunTagFilter: tc.rtf})
			if err != nil {
				t.Fatal(err)
			}
			var listed []string
			for _, r := range list.GetRuns() {
				for _, tg := range r.GetTags() {
					listed = append(listed, r.GetRunName()+"/"+tg.GetTagName())
				}
			}
			read, err := c.ReadScalars(ctx, &datapb.ReadScalarsRequest{ExperimentId: eid, PluginFilter: scalars, RunTagFilter: tc.rtf, Downsample: &datapb.Downsample{NumPoints: 1000}})
			if err != nil {
				t.Fatal(err)
			}
			var readNames []string
			for _, r := range read.GetRuns() {
				for _, tg := range r.GetTags() {
					readNames = append(readNames, r.GetRunName()+"/"+tg.GetTagName())
				}
			}
			if !slices.Equal(listed, tc.want) || !slices.Equal(readNames, tc.want) {
				t.Errorf("%s: listed %v, read %v, want %v", tc.name, listed, readNames, tc.want)
			}
		}
	})

	t.Run("ListMetadata", func(t *testing.T) {
		resp, err := c.ListScalars(ctx, &datapb.ListScalarsRequest{ExperimentId: eid, PluginFilter: scalars,
			RunTagFilter: &datapb.RunTagFilter{Runs: &datapb.RunFilter{Names: []string{"a"}}, Tags: &datapb.TagFilter{Names: []string{"loss"}}}})
		if err != nil {
			t.Fatal(err)
		}
		md := resp.GetRuns()[0].GetTags()[0].GetMetadata()
		if md.GetMaxStep() != 490 || md.GetMaxWallTime() != 2049 ||
			md.GetSummaryMetadata().GetPluginData().GetPluginName() != "scalars" ||
			md.GetSummaryMetadata().GetDataClass() != tbpb.DataClass_DATA_CLASS_SCALAR {
			t.Errorf("metadata = %v", md)
		}
		// A plugin with series of another class lists nothing here, and
		// runs without matching tags are left out.
		h, err := c.ListScalars(ctx, &datapb.ListScalarsRequest{ExperimentId: eid, PluginFilter: &datapb.PluginFilter{PluginName: "histograms"}})
		if err != nil || len(h.GetRuns()) != 0 {
			t.Errorf("ListScalars(histograms) = %v, %v", h, err)
		}
		tl, err := c.ListTensors(ctx, &datapb.ListTensorsRequest{ExperimentId: eid, PluginFilter: &datapb.PluginFilter{PluginName: "histograms"}})
		if err != nil || len(tl.GetRuns()) != 1 || tl.GetRuns()[0].GetRunName() != "a" || tl.GetRuns()[0].GetTags()[0].GetMetadata().GetMaxStep() != 5 {
			t.Errorf("ListTensors = %v, %v", tl, err)
		}
		bl, err := c.ListBlobSequences(ctx, &datapb.ListBlobSequencesRequest{ExperimentId: eid, PluginFilter: &datapb.PluginFilter{PluginName: "images"}})
		if err != nil || len(bl.GetRuns()) != 1 || bl.GetRuns()[0].GetTags()[0].GetMetadata().GetMaxLength() != 4 ||
			bl.GetRuns()[0].GetTags()[0].GetMetadata().GetMaxStep() != 4 {
			t.Errorf("ListBlobSequences = %v, %v", bl, err)
		}
	})

	t.Run("ReadTensors", func(t *testing.T) {
		resp, err := c.ReadTensors(ctx, &datapb.ReadTensorsRequest{ExperimentId: eid, PluginFilter: &datapb.PluginFilter{PluginName: "histograms"}, Downsample: &datapb.Downsample{NumPoints: 1}})
		if err != nil {
			t.Fatal(err)
		}
		d := resp.GetRuns()[0].GetTags()[0].GetData()
		if !slices.Equal(d.GetStep(), []int64{5}) || !slices.Equal(d.GetValue()[0].GetDoubleVal(), []float64{0, 2, 9}) {
			t.Errorf("ReadTensors = %v", d)
		}
	})

	t.Run("BlobKeysReadBack", func(t *testing.T) {
		resp, err := c.ReadBlobSequences(ctx, &datapb.ReadBlobSequencesRequest{ExperimentId: eid, PluginFilter: &datapb.PluginFilter{PluginName: "images"}, Downsample: &datapb.Downsample{NumPoints: 10}})
		if err != nil {
			t.Fatal(err)
		}
		d := resp.GetRuns()[0].GetTags()[0].GetData()
		if !slices.Equal(d.GetStep(), []int64{3, 4}) || len(d.GetValues()[1].GetBlobRefs()) != 4 {
			t.Fatalf("ReadBlobSequences = %v", d)
		}
		want := [][]byte{[]byte("2"), []byte("1"), []byte("step-4 pixels, a bit longer"), {}}
		for i, ref := range d.GetValues()[1].GetBlobRefs() {
			got, chunks, err := ReadBlob(ctx, c, ref.GetBlobKey())
			if err != nil {
				t.Fatalf("ReadBlob(%q): %v", ref.GetBlobKey(), err)
			}
			if !bytes.Equal(got, want[i]) {
				t.Errorf("blob %d = %q, want %q", i, got, want[i])
			}
			if len(want[i]) > 10 && chunks < 2 {
				t.Errorf("blob %d came in %d chunk(s); the service should stream it in several", i, chunks)
			}
		}
		// A key whose MAC does not verify is refused.
		key := d.GetValues()[0].GetBlobRefs()[2].GetBlobKey()
		if _, _, err := ReadBlob(ctx, c, key[:len(key)-2]+"AA"); status.Code(err) != codes.InvalidArgument {
			t.Errorf("ReadBlob(forged key) = %v, want InvalidArgument", err)
		}
	})

	t.Run("InvalidRequests", func(t *testing.T) {
		for name, call := range map[string]func() error{
			"no downsample": func() error {
				_, err := c.ReadScalars(ctx, &datapb.ReadScalarsRequest{ExperimentId: eid, PluginFilter: scalars})
				return err
			},
			"negative downsample": func() error {
				_, err := c.ReadTensors(ctx, &datapb.ReadTensorsRequest{ExperimentId: eid, PluginFilter: scalars, Downsample: &datapb.Downsample{NumPoints: -1}})
				return err
			},
			"empty plugin (list)": func() error {
				_, err := c.ListScalars(ctx, &datapb.ListScalarsRequest{ExperimentId: eid})
				return err
			},
			"empty plugin (read)": func() error {
				_, err := c.ReadBlobSequences(ctx, &datapb.ReadBlobSequencesRequest{ExperimentId: eid, PluginFilter: &datapb.PluginFilter{}, Downsample: &datapb.Downsample{NumPoints: 1}})
				return err
			},
			"no experiment": func() error {
				_, err := c.ListRuns(ctx, &datapb.ListRunsRequest{})
				return err
			},
			"placeholder experiment": func() error {
				_, err := c.ListPlugins(ctx, &datapb.ListPluginsRequest{ExperimentId: "defaultExperimentId"})
				return err
			},
			"malformed blob key": func() error {
				_, _, err := ReadBlob(ctx, c, eid+".not-a-key.AAAA")
				return err
			},
		} {
			if err := call(); status.Code(err) != codes.InvalidArgument {
				t.Errorf("%s: %v, want InvalidArgument", name, err)
			}
		}
	})

	t.Run("ZeroPoints", func(t *testing.T) {
		resp, err := c.ReadScalars(ctx, &datapb.ReadScalarsRequest{ExperimentId: eid, PluginFilter: scalars, Downsample: &datapb.Downsample{NumPoints: 0}})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range resp.GetRuns() {
			for _, tg := range r.GetTags() {
				if len(tg.GetData().GetStep()) != 0 {
					t.Errorf("num_points 0 gave %v", tg.GetData())
				}
			}
		}
	})
}

func shape(dims ...int64) *tbpb.TensorShapeProto {
	s := &tbpb.TensorShapeProto{}
	for _, d := range dims {
		s.Dim = append(s.Dim, &tbpb.TensorShapeProto_Dim{Size: d})
	}
	return s
}

// ReadBlob reads a whole blob and reports how many chunks it came in.
func ReadBlob(ctx context.Context, c datapb.TensorBoardDataProviderClient, key string) ([]byte, int, error) {
	stream, err := c.ReadBlob(ctx, &datapb.ReadBlobRequest{BlobKey: key})
	if err != nil {
		return nil, 0, err
	}
	var buf bytes.Buffer
	chunks := 0
	for {
		m, err := stream.Recv()
		if err == io.EOF {
			return buf.Bytes(), chunks, nil
		}
		if err != nil {
			return nil, chunks, err
		}
		chunks++
		buf.Write(m.GetData())
	}
}
