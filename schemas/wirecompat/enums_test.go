package wirecompat_test

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// wireEnums lists every value of each enum as "NAME=number". Enum numbers
// travel on the wire, and proto3 JSON (the hparams HTTP API) spells them by
// name, so both must match TensorBoard's.
var wireEnums = map[string][]string{
	"tensorboard.DataClass":                       {"DATA_CLASS_UNKNOWN=0", "DATA_CLASS_SCALAR=1", "DATA_CLASS_TENSOR=2", "DATA_CLASS_BLOB_SEQUENCE=3"},
	"tensorboard.SessionLog.SessionStatus":        {"STATUS_UNSPECIFIED=0", "START=1", "STOP=2", "CHECKPOINT=3"},
	"tensorboard.LogMessage.Level":                {"UNKNOWN=0", "DEBUGGING=10", "INFO=20", "WARN=30", "ERROR=40", "FATAL=50"},
	"tensorboard.AudioPluginData.Encoding":        {"UNKNOWN=0", "WAV=11"},
	"tensorboard.mesh.MeshPluginData.ContentType": {"UNDEFINED=0", "VERTEX=1", "FACE=2", "COLOR=3"},
	"tensorboard.service.BlobState":               {"BLOB_STATE_UNKNOWN=0", "BLOB_STATE_UNFINALIZED=1", "BLOB_STATE_CURRENT=2"},
	"tensorboard.service.CompatibilityVerdict":    {"VERDICT_UNKNOWN=0", "VERDICT_OK=1", "VERDICT_WARN=2", "VERDICT_ERROR=3"},
	"tensorboard.hparams.DataType":                {"DATA_TYPE_UNSET=0", "DATA_TYPE_STRING=1", "DATA_TYPE_BOOL=2", "DATA_TYPE_FLOAT64=3"},
	"tensorboard.hparams.DatasetType":             {"DATASET_UNKNOWN=0", "DATASET_TRAINING=1", "DATASET_VALIDATION=2"},
	"tensorboard.hparams.Status":                  {"STATUS_UNKNOWN=0", "STATUS_SUCCESS=1", "STATUS_FAILURE=2", "STATUS_RUNNING=3"},
	"tensorboard.hparams.SortOrder":               {"ORDER_UNSPECIFIED=0", "ORDER_ASC=1", "ORDER_DESC=2"},
	"tensorboard.hparams.AggregationType":         {"AGGREGATION_UNSET=0", "AGGREGATION_AVG=1", "AGGREGATION_MEDIAN=2", "AGGREGATION_MIN=3", "AGGREGATION_MAX=4"},
	"tensorboard.DataType":                        append(dataTypeBase(), dataTypeRefs()...),
}

// dataTypeBase lists the non-reference DataType values.
func dataTypeBase() []string {
	return []string{
		"DT_INVALID=0", "DT_FLOAT=1", "DT_DOUBLE=2", "DT_INT32=3", "DT_UINT8=4", "DT_INT16=5", "DT_INT8=6",
		"DT_STRING=7", "DT_COMPLEX64=8", "DT_INT64=9", "DT_BOOL=10", "DT_QINT8=11", "DT_QUINT8=12",
		"DT_QINT32=13", "DT_BFLOAT16=14", "DT_QINT16=15", "DT_QUINT16=16", "DT_UINT16=17",
		"DT_COMPLEX128=18", "DT_HALF=19", "DT_RESOURCE=20", "DT_VARIANT=21", "DT_UINT32=22", "DT_UINT64=23",
		"DT_FLOAT8_E5M2=24", "DT_FLOAT8_E4M3FN=25", "DT_FLOAT8_E4M3FNUZ=26", "DT_FLOAT8_E4M3B11FNUZ=27",
		"DT_FLOAT8_E5M2FNUZ=28", "DT_INT4=29", "DT_UINT4=30", "DT_INT2=31", "DT_UINT2=32", "DT_FLOAT4_E2M1FN=33",
	}
}

// dataTypeRefs derives the _REF values: every base type except DT_INVALID,
// with "_REF" appended and 100 added.
func dataTypeRefs() []string {
	var refs []string
	for _, spec := range dataTypeBase()[1:] {
		var name string
		var number int
		for i := len(spec) - 1; i >= 0; i-- {
			if spec[i] == '=' {
				name = spec[:i]
				fmt.Sscanf(spec[i+1:], "%d", &number)
				break
			}
		}
		refs = append(refs, fmt.Sprintf("%s_REF=%d", name, number+100))
	}
	return refs
}

func TestWireEnums(t *testing.T) {
	for name, want := range wireEnums {
		t.Run(name, func(t *testing.T) {
			ed, err := findDescriptor[protoreflect.EnumDescriptor](name)
			if err != nil {
				t.Fatalf("enum not registered: %v", err)
			}
			var got []string
			for i := range ed.Values().Len() {
				v := ed.Values().Get(i)
				got = append(got, fmt.Sprintf("%s=%d", v.Name(), v.Number()))
			}
			if missing, extra := diffLists(want, got); len(missing) > 0 || len(extra) > 0 {
				t.Errorf("values differ from TensorBoard's\n  missing or changed: %v\n  unexpected:         %v", missing, extra)
			}
		})
	}
}

// TestDataTypeRefCount guards the derivation above: 33 base types, 33 refs.
func TestDataTypeRefCount(t *testing.T) {
	if got := len(wireEnums["tensorboard.DataType"]); got != 34+33 {
		t.Errorf("DataType table has %d values, want 67 (DT_INVALID, 33 types, 33 _REF)", got)
	}
}
