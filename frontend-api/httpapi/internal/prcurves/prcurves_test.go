package prcurves

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/route"
	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
)

func TestPRCurveTrimsUndefinedTail(t *testing.T) {
	// 4 thresholds; the last two have TP + FP = 0.
	vals := []float64{
		5, 3, 0, 0, // TP
		5, 1, 0, 0, // FP
		0, 4, 5, 5, // TN
		0, 2, 5, 5, // FN
		0.5, 0.75, 0, 0, // precision
		1, 0.6, 0, 0, // recall
	}
	tp := &tbpb.TensorProto{Dtype: tbpb.DataType_DT_DOUBLE, TensorShape: shape(6, 4), DoubleVal: vals}
	e, err := prCurveEntryOf(tp)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Precision) != 2 || len(e.Thresholds) != 2 || e.Thresholds[1] != route.Float(1.0/3) || e.TruePositives[1] != 3 {
		t.Errorf("entry = %+v", e)
	}
}

func shape(dims ...int64) *tbpb.TensorShapeProto {
	s := &tbpb.TensorShapeProto{}
	for _, d := range dims {
		s.Dim = append(s.Dim, &tbpb.TensorShapeProto_Dim{Size: d})
	}
	return s
}

func FuzzPRCurve(f *testing.F) {
	b, _ := proto.Marshal(&tbpb.TensorProto{Dtype: tbpb.DataType_DT_DOUBLE, TensorShape: shape(6, 2), DoubleVal: []float64{1, 2}})
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		var tp tbpb.TensorProto
		if proto.Unmarshal(b, &tp) == nil {
			prCurveEntryOf(&tp)
		}
	})
}
