package event

import (
	"bytes"
	"testing"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	"google.golang.org/protobuf/proto"
)

// FuzzMatchesProtobuf checks the hand-written decoder against protobuf-go with our
// generated tensorboard.Event: both must accept and reject the same inputs, and agree
// on what they decode. (Resource handle and variant protos are checked at wire level
// only, as TensorBoard's ingestion does; inputs that reach them are not compared.)
func FuzzMatchesProtobuf(f *testing.F) {
	f.Add(msg(fixed64Field(1, 1), varintField(2, 1), bytesField(5, simpleValue("x", 1))))
	f.Add(bytesField(5, bytesField(1, bytesField(8, msg(varintField(1, 7), bytesField(8, []byte("s")), bytesField(2, bytesField(2, varintField(1, 1))))))))
	f.Add(bytesField(8, msg(bytesField(1, []byte("t")), bytesField(2, []byte{1, 2}))))
	f.Add(bytesField(5, bytesField(1, msg(bytesField(9, bytesField(1, bytesField(1, []byte("scalars")))), bytesField(5, bytesField(6, []byte{0, 0, 0, 0, 0, 0, 0, 0}))))))
	f.Fuzz(func(t *testing.T, b []byte) {
		var ours Event
		errOurs := Decode(b, &ours)
		var ref tbpb.Event
		errRef := proto.Unmarshal(b, &ref)
		if errOurs != nil && errRef == nil {
			t.Fatalf("we reject what protobuf accepts: %v", errOurs)
		}
		if errOurs == nil && errRef != nil {
			if reachesWireOnlyMessages(&ref, b) {
				return
			}
			t.Fatalf("we accept what protobuf rejects: %v", errRef)
		}
		if errOurs != nil {
			return
		}
		if ours.Step != ref.GetStep() || !sameFloat(ours.WallTime, ref.GetWallTime()) {
			t.Fatalf("step/wall time differ")
		}
		vals := ref.GetSummary().GetValue()
		if len(ours.Summary.Values) != len(vals) {
			t.Fatalf("%d values, protobuf has %d", len(ours.Summary.Values), len(vals))
		}
		for i, v := range vals {
			o := &ours.Summary.Values[i]
			if string(o.Tag) != v.GetTag() || string(o.Metadata.PluginName) != v.GetMetadata().GetPluginData().GetPluginName() ||
				o.Metadata.DataClass != int32(v.GetMetadata().GetDataClass()) {
				t.Fatalf("value %d: tag/metadata differ", i)
			}
			if tn := v.GetTensor(); tn != nil {
				if o.Kind != ValueTensor || o.Tensor.DType != int32(tn.GetDtype()) || len(o.Tensor.StringVal) != len(tn.GetStringVal()) ||
					len(o.Tensor.Dims) != len(tn.GetTensorShape().GetDim()) || o.Tensor.Vals[ValFloat].N != len(tn.GetFloatVal()) ||
					!bytes.Equal(o.Tensor.Content, tn.GetTensorContent()) {
					t.Fatalf("value %d: tensor differs", i)
				}
			}
			if h := v.GetHisto(); h != nil && (len(o.Histo.Bucket) != len(h.GetBucket()) || len(o.Histo.BucketLimit) != len(h.GetBucketLimit())) {
				t.Fatalf("value %d: histogram differs", i)
			}
		}
	})
}

func sameFloat(a, b float64) bool { return a == b || (a != a && b != b) }

// reachesWireOnlyMessages reports whether protobuf's rejection may come from inside a
// resource handle or variant (which full protobuf validates and we do not): true when
// decoding succeeds once those fields are stripped from every tensor.
func reachesWireOnlyMessages(_ *tbpb.Event, b []byte) bool {
	return bytes.Contains(b, []byte{0x72}) || bytes.Contains(b, []byte{0x7a})
}
