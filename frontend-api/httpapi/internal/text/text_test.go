package text

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/markdown"
	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
)

func TestTextToHTML(t *testing.T) {
	table := &tbpb.TensorProto{Dtype: tbpb.DataType_DT_STRING, TensorShape: shape(2, 2), StringVal: [][]byte{[]byte("a"), []byte("*b*"), []byte("c"), []byte("d")}}
	got, err := textToHTML(t.Context(), testRenderer, table, true)
	if err != nil || strings.Count(got, "<tr>") != 2 || strings.Count(got, "<td>") != 4 || !strings.Contains(got, "<em>b</em>") {
		t.Errorf("2x2 table: %q, %v", got, err)
	}
	plain, err := textToHTML(t.Context(), testRenderer, &tbpb.TensorProto{Dtype: tbpb.DataType_DT_STRING, StringVal: [][]byte{[]byte("<b>x</b>")}}, false)
	if err != nil || plain != "&lt;b&gt;x&lt;/b&gt;" {
		t.Errorf("markdown=false: %q, %v", plain, err)
	}
	cube := &tbpb.TensorProto{Dtype: tbpb.DataType_DT_STRING, TensorShape: shape(1, 2, 2), StringVal: [][]byte{[]byte("a"), []byte("zz"), []byte("b"), []byte("yy")}}
	if got, err := textToHTML(t.Context(), testRenderer, cube, true); err != nil || !strings.Contains(got, "Warning") || !strings.Contains(got, "<td><p>b</p>") || strings.Contains(got, "zz") {
		t.Errorf("3-d text shows [0, j, 0]: %q, %v", got, err)
	}
	huge := &tbpb.TensorProto{Dtype: tbpb.DataType_DT_STRING, TensorShape: shape(1<<40, 1<<40, 0)}
	if got, err := textToHTML(t.Context(), testRenderer, huge, true); err == nil && strings.Contains(got, "<td>") {
		t.Errorf("empty huge tensor: %q, %v", got, err)
	}
	if _, err := textToHTML(t.Context(), testRenderer, &tbpb.TensorProto{Dtype: tbpb.DataType_DT_STRING, TensorShape: shape(1 << 40), StringVal: [][]byte{[]byte("a")}}, true); err == nil {
		t.Error("a claimed 2^40 strings were expanded")
	}
}

var testRenderer, _ = markdown.New(markdown.DefaultLimits())

func shape(dims ...int64) *tbpb.TensorShapeProto {
	s := &tbpb.TensorShapeProto{}
	for _, d := range dims {
		s.Dim = append(s.Dim, &tbpb.TensorShapeProto_Dim{Size: d})
	}
	return s
}

func FuzzTextToHTML(f *testing.F) {
	b, _ := proto.Marshal(&tbpb.TensorProto{Dtype: tbpb.DataType_DT_STRING, TensorShape: shape(2, 2), StringVal: [][]byte{[]byte("a")}})
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		var tp tbpb.TensorProto
		if proto.Unmarshal(b, &tp) == nil {
			textToHTML(t.Context(), testRenderer, &tp, true)
		}
	})
}
