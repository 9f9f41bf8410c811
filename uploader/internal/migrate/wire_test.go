package migrate

import (
	"math"
	"testing"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/google/go-cmp/cmp"

	"github.com/tbhub/tbhub/uploader/internal/event"
)

func TestAppendTensorProtoMigratesLegacyValues(t *testing.T) {
	shape := func(dims ...int64) *tbpb.TensorShapeProto {
		s := &tbpb.TensorShapeProto{}
		for _, d := range dims {
			s.Dim = append(s.Dim, &tbpb.TensorShapeProto_Dim{Size: d})
		}
		return s
	}
	f32 := func(fs ...float32) []byte {
		var b []byte
		for _, f := range fs {
			u := math.Float32bits(f)
			b = append(b, byte(u), byte(u>>8), byte(u>>16), byte(u>>24))
		}
		return b
	}
	cases := []struct {
		name string
		in   *tbpb.Summary_Value
		want *tbpb.TensorProto
	}{
		{"simple_value", &tbpb.Summary_Value{Value: &tbpb.Summary_Value_SimpleValue{SimpleValue: 2.5}},
			&tbpb.TensorProto{Dtype: tbpb.DataType_DT_FLOAT, TensorShape: shape(), FloatVal: []float32{2.5}}},
		{"histogram", &tbpb.Summary_Value{Value: &tbpb.Summary_Value_Histo{Histo: &tbpb.HistogramProto{
			Min: -1, Max: 9, Bucket: []float64{0, 2, 0, 3, 0}, BucketLimit: []float64{-2, 0, 4, 8, 10}}}},
			&tbpb.TensorProto{Dtype: tbpb.DataType_DT_FLOAT, TensorShape: shape(3, 3), TensorContent: f32(-1, 0, 2, 0, 4, 0, 4, 9, 3)}},
		{"empty histogram", &tbpb.Summary_Value{Value: &tbpb.Summary_Value_Histo{Histo: &tbpb.HistogramProto{Bucket: []float64{0, 0}}}},
			&tbpb.TensorProto{Dtype: tbpb.DataType_DT_FLOAT, TensorShape: shape(0, 3)}},
		{"image", &tbpb.Summary_Value{Value: &tbpb.Summary_Value_Image{Image: &tbpb.Summary_Image{Width: 4, Height: 2, EncodedImageString: []byte("png")}}},
			&tbpb.TensorProto{Dtype: tbpb.DataType_DT_STRING, TensorShape: shape(3), StringVal: [][]byte{[]byte("4"), []byte("2"), []byte("png")}}},
		{"audio", &tbpb.Summary_Value{Value: &tbpb.Summary_Value_Audio{Audio: &tbpb.Summary_Audio{EncodedAudioString: []byte("wav")}}},
			&tbpb.TensorProto{Dtype: tbpb.DataType_DT_STRING, TensorShape: shape(1, 2), StringVal: [][]byte{[]byte("wav"), {}}}},
		{"no value", &tbpb.Summary_Value{}, &tbpb.TensorProto{Dtype: tbpb.DataType_DT_FLOAT, TensorShape: shape(0)}},
		{"tensor as it is", &tbpb.Summary_Value{Value: &tbpb.Summary_Value_Tensor{Tensor: &tbpb.TensorProto{Dtype: tbpb.DataType_DT_INT64, Int64Val: []int64{1, 2}, TensorShape: shape(2)}}},
			&tbpb.TensorProto{Dtype: tbpb.DataType_DT_INT64, Int64Val: []int64{1, 2}, TensorShape: shape(2)}},
	}
	for _, tc := range cases {
		tc.in.Tag = "t"
		b, err := proto.Marshal(&tbpb.Event{What: &tbpb.Event_Summary{Summary: &tbpb.Summary{Value: []*tbpb.Summary_Value{tc.in}}}})
		if err != nil {
			t.Fatal(err)
		}
		var ev event.Event
		if err := event.Decode(b, &ev); err != nil {
			t.Fatal(err)
		}
		got := &tbpb.TensorProto{}
		if err := proto.Unmarshal(AppendTensorProto(nil, &Point{Kind: FromValue, Value: &ev.Summary.Values[0]}), got); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if d := cmp.Diff(tc.want, got, protocmp.Transform()); d != "" {
			t.Errorf("%s: (-want +got)\n%s", tc.name, d)
		}
	}
}

func TestMetadataMarshal(t *testing.T) {
	md := Metadata{PluginName: "images", PluginContent: imageContent, DisplayName: "d", Description: "**x**", DataClass: ClassBlobSequence}
	got := &tbpb.SummaryMetadata{}
	if err := proto.Unmarshal(md.Marshal(), got); err != nil {
		t.Fatal(err)
	}
	want := &tbpb.SummaryMetadata{
		PluginData:         &tbpb.SummaryMetadata_PluginData{PluginName: "images", Content: imageContent},
		DisplayName:        "d",
		SummaryDescription: "**x**",
		DataClass:          tbpb.DataClass_DATA_CLASS_BLOB_SEQUENCE,
	}
	if d := cmp.Diff(want, got, protocmp.Transform()); d != "" {
		t.Errorf("(-want +got)\n%s", d)
	}
	content := &tbpb.ImagePluginData{}
	if err := proto.Unmarshal(imageContent, content); err != nil || !content.GetConvertedToTensor() {
		t.Errorf("image plugin content %v: %v", content, err)
	}
	audio := &tbpb.AudioPluginData{}
	if err := proto.Unmarshal(audioContent, audio); err != nil || !audio.GetConvertedToTensor() || audio.GetEncoding() != tbpb.AudioPluginData_WAV {
		t.Errorf("audio plugin content %v: %v", audio, err)
	}
}
