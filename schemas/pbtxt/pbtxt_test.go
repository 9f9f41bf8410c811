package pbtxt_test

import (
	"bytes"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/structpb"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	hparamspb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/hparams"
	"github.com/tbhub/tbhub/schemas/pbtxt"
)

var update = flag.Bool("update", false, "rewrite testdata/*.binpb from the messages built in this file (then regenerate the .pbtxt goldens with Python, see testdata/README.md)")

// goldenCases are the inputs of the golden test. Each is stored as
// testdata/<name>.<full message name>.binpb; the matching .pbtxt was
// written by Python's protobuf text_format, not by this package.
func goldenCases() map[string]proto.Message {
	f32 := func(v float64) *tbpb.AttrValue { return &tbpb.AttrValue{Value: &tbpb.AttrValue_F{F: float32(v)}} }
	return map[string]proto.Message{
		"graph": &tbpb.GraphDef{
			Node: []*tbpb.NodeDef{
				{
					Name:  "scope/op_é",
					Op:    "Custom",
					Input: []string{"a:1", "^b"},
					Attr: map[string]*tbpb.AttrValue{
						"zeta":       {Value: &tbpb.AttrValue_S{S: []byte("quote\" apos' back\\ tab\t nl\n cr\r bell\x07 del\x7f hi\xff")}},
						"alpha":      {Value: &tbpb.AttrValue_B{B: false}},
						"Beta":       {Value: &tbpb.AttrValue_I{I: -9223372036854775808}},
						"é_key":      {Value: &tbpb.AttrValue_Placeholder{Placeholder: "ünïcode ✓"}},
						"empty":      {},
						"dtype":      {Value: &tbpb.AttrValue_Type{Type: tbpb.DataType(999)}},
						"f_tenth":    f32(0.1),
						"f_small":    f32(1e-5),
						"f_three":    f32(3),
						"f_negzero":  f32(math.Copysign(0, -1)),
						"f_big":      f32(1e20),
						"f_mid":      f32(123456.789),
						"f_nan":      f32(math.NaN()),
						"f_inf":      f32(math.Inf(1)),
						"f_ninf":     f32(math.Inf(-1)),
						"f_1e16":     f32(1e16),
						"f_tiny":     f32(1e-45),
						"f_maxfloat": f32(math.MaxFloat32),
						"shape": {Value: &tbpb.AttrValue_Shape{Shape: &tbpb.TensorShapeProto{
							Dim: []*tbpb.TensorShapeProto_Dim{{Size: -1}, {Size: 0, Name: "batch"}, {Size: 3}},
						}}},
						"list": {Value: &tbpb.AttrValue_List{List: &tbpb.AttrValue_ListValue{
							S:    [][]byte{[]byte(""), []byte("x")},
							I:    []int64{0, 1, -1},
							F:    []float32{0, 0.5, 2.5e-7},
							B:    []bool{true, false},
							Type: []tbpb.DataType{tbpb.DataType_DT_FLOAT, tbpb.DataType_DT_INT64_REF},
							Func: []*tbpb.NameAttrList{{Name: "g"}},
						}}},
						"value": {Value: &tbpb.AttrValue_Tensor{Tensor: &tbpb.TensorProto{
							Dtype:       tbpb.DataType_DT_DOUBLE,
							TensorShape: &tbpb.TensorShapeProto{},
							DoubleVal:   []float64{0.1, 1e16, 1e15, 1e-4, 1e-5, math.MaxFloat64, 5e-324, -2.5, 1.0 / 3, 100, 0},
						}}},
					},
				},
				{Name: "b", Op: "NoOp"},
			},
			Library: &tbpb.FunctionDefLibrary{
				Function: []*tbpb.FunctionDef{{
					Signature: &tbpb.OpDef{Name: "g", InputArg: []*tbpb.OpDef_ArgDef{{Name: "x", Type: tbpb.DataType_DT_INT32}}},
					ArgAttr: map[uint32]*tbpb.FunctionDef_ArgAttrs{
						2: {Attr: map[string]*tbpb.AttrValue{"_output_shapes": {Value: &tbpb.AttrValue_List{List: &tbpb.AttrValue_ListValue{}}}}},
						0: {},
					},
					ResourceArgUniqueId: map[uint32]uint32{0: 0, 1: 5, 10: 0},
					Ret:                 map[string]string{"y": "id:output:0", "": "empty"},
				}},
			},
			Versions: &tbpb.VersionDef{Producer: 1882, BadConsumers: []int32{1, 2}},
			DebugInfo: &tbpb.GraphDebugInfo{
				Files: []string{"train.py"},
				FramesById: map[uint64]*tbpb.GraphDebugInfo_FileLineCol{
					18446744073709551615: {FileIndex: proto.Int32(0), Line: proto.Int32(0)},
					3:                    {Func: proto.String(""), Code: proto.String("x = f(y)")},
				},
			},
		},
		"run_metadata": &tbpb.RunMetadata{
			StepStats: &tbpb.StepStats{DevStats: []*tbpb.DeviceStepStats{{
				Device: "/job:localhost/replica:0/task:0/device:CPU:0",
				NodeStats: []*tbpb.NodeExecStats{{
					NodeName: "MatMul", AllStartMicros: 1700000000123456, OpEndRelMicros: 42, ThreadId: 0,
					Memory: []*tbpb.AllocatorMemoryUsed{{AllocatorName: "cpu", TotalBytes: 1 << 40, AllocationRecords: []*tbpb.AllocationRecord{{AllocMicros: 1, AllocBytes: -256}}}},
				}},
				ThreadNames: map[uint32]string{7: "worker", 0: "main", 3: ""},
			}}},
			CostGraph: &tbpb.CostGraphDef{
				Node: []*tbpb.CostGraphDef_Node{{Name: "MatMul", Id: 0, IsFinal: true, ControlInput: []int32{2, 1}}},
				Cost: []*tbpb.CostGraphDef_AggregatedCost{{Cost: 0.3, Dimension: "time"}},
			},
			SessionMetadata: &tbpb.SessionMetadata{Name: "sess"},
		},
		"hparams": &hparamspb.HParamsPluginData{
			Data: &hparamspb.HParamsPluginData_SessionStartInfo{SessionStartInfo: &hparamspb.SessionStartInfo{
				Hparams: map[string]*structpb.Value{
					"lr":        structpb.NewNumberValue(0.001),
					"optimizer": structpb.NewStringValue("adam"),
					"dropout":   structpb.NewBoolValue(false),
					"nothing":   structpb.NewNullValue(),
					"layers":    structpb.NewNumberValue(3),
				},
				GroupName:     "g1",
				StartTimeSecs: 1700000000.25,
			}},
		},
	}
}

func TestGolden(t *testing.T) {
	cases := goldenCases()
	if *update {
		for name, m := range cases {
			b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", name+"."+string(m.ProtoReflect().Descriptor().FullName())+".binpb")
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}

	inputs, err := filepath.Glob(filepath.Join("testdata", "*.binpb"))
	if err != nil {
		t.Fatal(err)
	}
	if len(inputs) != len(cases) {
		t.Fatalf("found %d testdata/*.binpb files, want %d (run with -update)", len(inputs), len(cases))
	}
	for _, in := range inputs {
		t.Run(filepath.Base(in), func(t *testing.T) {
			m := readBinary(t, in)
			want, err := os.ReadFile(strings.TrimSuffix(in, ".binpb") + ".pbtxt")
			if err != nil {
				t.Fatalf("golden missing (see testdata/README.md): %v", err)
			}
			got := pbtxt.Marshal(m)
			if !bytes.Equal(got, want) {
				t.Errorf("Marshal differs from Python's text_format (-python +ours):\n%s", cmp.Diff(string(want), string(got)))
			}
		})
	}
}

// readBinary parses testdata/<name>.<full message name>.binpb.
func readBinary(t *testing.T, path string) proto.Message {
	t.Helper()
	base := strings.TrimSuffix(filepath.Base(path), ".binpb")
	_, fullName, _ := strings.Cut(base, ".")
	mt, err := protoregistry.GlobalTypes.FindMessageByName(protoreflect.FullName(fullName))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := mt.New().Interface()
	if err := proto.Unmarshal(b, m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

// TestParsesBack checks that Go's text parser reads the output back into the
// same message, so the format stays usable as an interchange format.
func TestParsesBack(t *testing.T) {
	for name, m := range goldenCases() {
		t.Run(name, func(t *testing.T) {
			out := m.ProtoReflect().New().Interface()
			if err := prototext.Unmarshal(pbtxt.Marshal(m), out); err != nil {
				t.Fatalf("prototext.Unmarshal: %v\n%s", err, pbtxt.Marshal(m))
			}
			// proto.Equal, unlike cmp, treats NaN as equal to NaN.
			if !proto.Equal(m, out) {
				t.Errorf("text round trip changed the message (-want +got):\n%s", cmp.Diff(m, out, protocmp.Transform()))
			}
		})
	}
}

func TestEmptyMessage(t *testing.T) {
	if got := pbtxt.Marshal(&tbpb.GraphDef{}); len(got) != 0 {
		t.Errorf("Marshal(empty) = %q, want empty", got)
	}
}

// TestDashboardLineShape checks the property TensorBoard's graph dashboard
// relies on: every line either opens a message with " {", closes one with
// "}", or is a single "name: value".
func TestDashboardLineShape(t *testing.T) {
	for name, m := range goldenCases() {
		for i, line := range strings.Split(strings.TrimSuffix(string(pbtxt.Marshal(m)), "\n"), "\n") {
			trimmed := strings.TrimSpace(line)
			switch {
			case trimmed == "}":
			case strings.HasSuffix(trimmed, " {") && !strings.Contains(trimmed, ":"):
			case strings.Contains(trimmed, ": ") && !strings.HasSuffix(trimmed, "{"):
			default:
				t.Errorf("%s line %d: %q is none of `name {`, `}`, `name: value`", name, i+1, line)
			}
		}
	}
}
