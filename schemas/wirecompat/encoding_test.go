package wirecompat_test

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/google/go-cmp/cmp"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
)

// TestEventCRCVector checks the event of TensorBoard's masked-CRC test
// vector: an Event holding only file_version "CRC test, one two" must
// serialize to tag 0x1a (field 3, length-delimited), length 0x11, then the
// string.
func TestEventCRCVector(t *testing.T) {
	const version = "CRC test, one two"
	ev := &tbpb.Event{What: &tbpb.Event_FileVersion{FileVersion: version}}

	got, err := proto.MarshalOptions{Deterministic: true}.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	want := append([]byte{0x1a, 0x11}, version...)
	if !bytes.Equal(got, want) {
		t.Fatalf("Marshal = % x\nwant      % x", got, want)
	}

	var back tbpb.Event
	if err := proto.Unmarshal(want, &back); err != nil {
		t.Fatal(err)
	}
	if back.GetFileVersion() != version || back.GetWallTime() != 0 || back.GetStep() != 0 {
		t.Errorf("Unmarshal = %v, want only file_version %q", &back, version)
	}
}

// sampleGraph is a small graph using every scalar attribute kind the graphs
// dashboard renders, a list, a tensor, a shape, a function library and
// versions.
func sampleGraph() *tbpb.GraphDef {
	shape := func(dims ...int64) *tbpb.TensorShapeProto {
		s := &tbpb.TensorShapeProto{}
		for _, d := range dims {
			s.Dim = append(s.Dim, &tbpb.TensorShapeProto_Dim{Size: d})
		}
		return s
	}
	return &tbpb.GraphDef{
		Node: []*tbpb.NodeDef{
			{
				Name: "input/x",
				Op:   "Placeholder",
				Attr: map[string]*tbpb.AttrValue{
					"dtype": {Value: &tbpb.AttrValue_Type{Type: tbpb.DataType_DT_FLOAT}},
					"shape": {Value: &tbpb.AttrValue_Shape{Shape: shape(-1, 784)}},
				},
			},
			{
				Name: "dense/kernel",
				Op:   "Const",
				Attr: map[string]*tbpb.AttrValue{
					"dtype": {Value: &tbpb.AttrValue_Type{Type: tbpb.DataType_DT_FLOAT}},
					"value": {Value: &tbpb.AttrValue_Tensor{Tensor: &tbpb.TensorProto{
						Dtype:       tbpb.DataType_DT_FLOAT,
						TensorShape: shape(2, 2),
						FloatVal:    []float32{0.5, -1.25, 3, 1e-3},
					}}},
				},
			},
			{
				Name:   "dense/MatMul",
				Op:     "MatMul",
				Input:  []string{"input/x", "dense/kernel", "^init"},
				Device: "/job:localhost/replica:0/task:0/device:CPU:0",
				Attr: map[string]*tbpb.AttrValue{
					"T":           {Value: &tbpb.AttrValue_Type{Type: tbpb.DataType_DT_FLOAT}},
					"transpose_a": {Value: &tbpb.AttrValue_B{B: false}},
					"transpose_b": {Value: &tbpb.AttrValue_B{B: true}},
					"_class":      {Value: &tbpb.AttrValue_S{S: []byte("loc:@dense/kernel")}},
					"alpha":       {Value: &tbpb.AttrValue_F{F: 0.25}},
					"seed":        {Value: &tbpb.AttrValue_I{I: -42}},
					"strides": {Value: &tbpb.AttrValue_List{List: &tbpb.AttrValue_ListValue{
						I:     []int64{1, 2, 2, 1},
						S:     [][]byte{[]byte("a"), {0xff, 0x00}},
						Type:  []tbpb.DataType{tbpb.DataType_DT_INT32, tbpb.DataType_DT_STRING},
						Shape: []*tbpb.TensorShapeProto{shape(), shape(3), {UnknownRank: true}},
					}}},
					"f": {Value: &tbpb.AttrValue_Func{Func: &tbpb.NameAttrList{
						Name: "helper",
						Attr: map[string]*tbpb.AttrValue{"N": {Value: &tbpb.AttrValue_I{I: 3}}},
					}}},
				},
			},
		},
		Versions: &tbpb.VersionDef{Producer: 1882, MinConsumer: 12, BadConsumers: []int32{7}},
		Library: &tbpb.FunctionDefLibrary{
			Function: []*tbpb.FunctionDef{{
				Signature: &tbpb.OpDef{
					Name:      "helper",
					InputArg:  []*tbpb.OpDef_ArgDef{{Name: "x", Type: tbpb.DataType_DT_FLOAT}},
					OutputArg: []*tbpb.OpDef_ArgDef{{Name: "y", TypeAttr: "T"}},
					Attr:      []*tbpb.OpDef_AttrDef{{Name: "T", Type: "type"}},
				},
				NodeDef: []*tbpb.NodeDef{{Name: "id", Op: "Identity", Input: []string{"x"}}},
				Ret:     map[string]string{"y": "id:output:0"},
			}},
			Gradient: []*tbpb.GradientDef{{FunctionName: "helper", GradientFunc: "helper_grad"}},
		},
	}
}

func TestGraphDefRoundTrip(t *testing.T) {
	g := sampleGraph()

	t.Run("binary", func(t *testing.T) {
		var back tbpb.GraphDef
		binaryRoundTrip(t, g, &back)
		if diff := cmp.Diff(g, &back, protocmp.Transform()); diff != "" {
			t.Errorf("binary round trip changed the graph (-want +got):\n%s", diff)
		}
	})

	t.Run("text", func(t *testing.T) {
		var back tbpb.GraphDef
		textRoundTrip(t, g, &back)
		if diff := cmp.Diff(g, &back, protocmp.Transform()); diff != "" {
			t.Errorf("text round trip changed the graph (-want +got):\n%s", diff)
		}
	})
}

// TestGraphDefTensorFlowText parses text format as TensorFlow and
// TensorBoard write it (field names, enum names, map entries as repeated
// key/value messages), so the names, not just the numbers, are checked.
func TestGraphDefTensorFlowText(t *testing.T) {
	const pbtxt = `
node {
  name: "dense/kernel"
  op: "Const"
  attr {
    key: "dtype"
    value { type: DT_FLOAT }
  }
  attr {
    key: "value"
    value {
      tensor {
        dtype: DT_FLOAT
        tensor_shape { dim { size: 2 } dim { size: 2 } }
        float_val: 0.5
        float_val: -1.25
        float_val: 3
        float_val: 0.001
      }
    }
  }
}
node {
  name: "input/x"
  op: "Placeholder"
  attr {
    key: "dtype"
    value { type: DT_FLOAT }
  }
  attr {
    key: "shape"
    value { shape { dim { size: -1 } dim { size: 784 } } }
  }
}
versions { producer: 1882 min_consumer: 12 bad_consumers: 7 }
`
	var got tbpb.GraphDef
	if err := prototext.Unmarshal([]byte(pbtxt), &got); err != nil {
		t.Fatal(err)
	}
	g := sampleGraph()
	want := &tbpb.GraphDef{Node: []*tbpb.NodeDef{g.Node[1], g.Node[0]}, Versions: g.Versions}
	if diff := cmp.Diff(want, &got, protocmp.Transform()); diff != "" {
		t.Errorf("parsed graph differs (-want +got):\n%s", diff)
	}
}

// TestRunMetadataRoundTrip covers the other proto the graphs dashboard
// serves as text: run metadata with step stats, a cost graph and a
// partition graph.
func TestRunMetadataRoundTrip(t *testing.T) {
	md := &tbpb.RunMetadata{
		StepStats: &tbpb.StepStats{DevStats: []*tbpb.DeviceStepStats{{
			Device: "/device:CPU:0",
			NodeStats: []*tbpb.NodeExecStats{{
				NodeName:       "dense/MatMul",
				AllStartMicros: 1700000000000000,
				OpEndRelMicros: 15,
				Memory:         []*tbpb.AllocatorMemoryUsed{{AllocatorName: "cpu", TotalBytes: 4096, PeakBytes: 4096}},
				Output: []*tbpb.NodeOutput{{Slot: 0, TensorDescription: &tbpb.TensorDescription{
					Dtype:                 tbpb.DataType_DT_FLOAT,
					Shape:                 &tbpb.TensorShapeProto{Dim: []*tbpb.TensorShapeProto_Dim{{Size: 32}, {Size: 10}}},
					AllocationDescription: &tbpb.AllocationDescription{RequestedBytes: 1280, AllocatedBytes: 1280, AllocatorName: "cpu"},
				}}},
				ThreadId: 7,
			}},
			ThreadNames: map[uint32]string{7: "worker-7"},
		}}},
		CostGraph: &tbpb.CostGraphDef{Node: []*tbpb.CostGraphDef_Node{{
			Name: "dense/MatMul", Id: 3, ComputeCost: 12,
			InputInfo:  []*tbpb.CostGraphDef_Node_InputInfo{{PrecedingNode: 1, PrecedingPort: 0}},
			OutputInfo: []*tbpb.CostGraphDef_Node_OutputInfo{{Size: 1280, AliasInputPort: -1, Dtype: tbpb.DataType_DT_FLOAT}},
		}}},
		PartitionGraphs: []*tbpb.GraphDef{sampleGraph()},
		SessionMetadata: &tbpb.SessionMetadata{Name: "train", Version: 2},
	}
	var fromBinary, fromText tbpb.RunMetadata
	binaryRoundTrip(t, md, &fromBinary)
	textRoundTrip(t, &fromBinary, &fromText)
	if diff := cmp.Diff(md, &fromText, protocmp.Transform()); diff != "" {
		t.Errorf("binary then text round trip changed run metadata (-want +got):\n%s", diff)
	}
}

// binaryRoundTrip serializes in and parses the bytes into out.
func binaryRoundTrip(t *testing.T, in, out proto.Message) {
	t.Helper()
	b, err := proto.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := proto.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
}

// textRoundTrip writes in as text format and parses the text into out.
func textRoundTrip(t *testing.T, in, out proto.Message) {
	t.Helper()
	txt, err := prototext.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := prototext.Unmarshal(txt, out); err != nil {
		t.Fatalf("parsing our own text format: %v\n%s", err, txt)
	}
}
