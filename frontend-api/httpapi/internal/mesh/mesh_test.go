package mesh

import (
	"bytes"
	"encoding/binary"
	"math"
	"net/http"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/route/routetest"
	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	meshpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/mesh"
)

// batch is a float tensor of shape [len(samples), rows, cols].
func batch(rows, cols int64, samples ...[]float32) *tbpb.TensorProto {
	t := &tbpb.TensorProto{Dtype: tbpb.DataType_DT_FLOAT, TensorShape: &tbpb.TensorShapeProto{Dim: []*tbpb.TensorShapeProto_Dim{
		{Size: int64(len(samples))}, {Size: rows}, {Size: cols}}}}
	for _, s := range samples {
		t.FloatVal = append(t.FloatVal, s...)
	}
	return t
}

// table holds the mesh "cube" of run "train": vertices at steps 2 and 1
// (two samples), faces at step 1; and, in the run, a series of another
// plugin data that is no mesh.
func table(t *testing.T) Plugin {
	t.Helper()
	component := func(tag string, ct meshpb.MeshPluginData_ContentType, steps []int64, values ...*tbpb.TensorProto) routetest.Series {
		content, err := proto.Marshal(&meshpb.MeshPluginData{Name: "cube", ContentType: ct, JsonConfig: `{"camera": {}}`, Components: 3})
		if err != nil {
			t.Fatal(err)
		}
		return routetest.Series{Plugin: "mesh", Run: "train", Tag: tag, Content: content, Steps: steps, Tensors: values}
	}
	return Plugin{routetest.Env(t, &routetest.Provider{Series: []routetest.Series{
		component("cube_FACE", meshpb.MeshPluginData_FACE, []int64{1}, batch(1, 3, []float32{0, 1, 2})),
		component("cube_VERTEX", meshpb.MeshPluginData_VERTEX, []int64{1, 2},
			batch(1, 3, []float32{0.5, 1, -2}, []float32{3, 4, 5}), batch(1, 3, []float32{9, 9, 9})),
		{Plugin: "mesh", Run: "train", Tag: "garbage", Content: []byte{0xff}, Steps: []int64{1}, Tensors: []*tbpb.TensorProto{batch(1, 1, []float32{1})}},
	}})}
}

func TestRoutes(t *testing.T) {
	t.Parallel()
	h := table(t)
	const p = "/experiment/e1/data/plugin/mesh/"
	routetest.Run(t, []routetest.Case{
		{Name: "tags", Fn: h.MeshTags, Target: p + "tags", Want: `{"train": {"cube": {"samples": 1}}}`},
		// By step, then vertices before faces.
		{Name: "meshes", Fn: h.Meshes, Target: p + "meshes?run=train&tag=cube", Want: `[
			{"wall_time": 1001, "step": 1, "content_type": 1, "components": 3, "config": "{\"camera\": {}}", "data_shape": [2, 1, 3]},
			{"wall_time": 1001, "step": 1, "content_type": 2, "components": 3, "config": "{\"camera\": {}}", "data_shape": [1, 1, 3]},
			{"wall_time": 1002, "step": 2, "content_type": 1, "components": 3, "config": "{\"camera\": {}}", "data_shape": [1, 1, 3]}]`},
		{Name: "meshes of a missing name", Fn: h.Meshes, Target: p + "meshes?run=train&tag=sphere", Want: `[]`},
		{Name: "meshes without a run", Fn: h.Meshes, Target: p + "meshes?tag=cube", Code: http.StatusBadRequest},
		{Name: "data of no content type", Fn: h.MeshData, Target: p + "data?run=train&tag=cube", Code: http.StatusBadRequest},
		{Name: "data of an undefined content type", Fn: h.MeshData, Target: p + "data?run=train&tag=cube&content_type=UNDEFINED", Code: http.StatusBadRequest},
		{Name: "data at a step that is no number", Fn: h.MeshData, Target: p + "data?run=train&tag=cube&content_type=VERTEX&step=x", Code: http.StatusBadRequest},
		{Name: "data past the samples", Fn: h.MeshData, Target: p + "data?run=train&tag=cube&content_type=VERTEX&step=1&sample=2", Code: http.StatusBadRequest},
	})
}

// The data route answers one component at one step and sample as
// little-endian binary: float32 vertices, int32 faces; nothing at a step
// without data.
func TestData(t *testing.T) {
	t.Parallel()
	h := table(t)
	floats := func(vs ...float32) []byte {
		var b []byte
		for _, v := range vs {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		}
		return b
	}
	for _, c := range []struct {
		query string
		want  []byte
	}{
		{"content_type=VERTEX&step=1", floats(0.5, 1, -2)},
		{"content_type=VERTEX&step=1&sample=1", floats(3, 4, 5)},
		{"content_type=VERTEX&step=2", floats(9, 9, 9)},
		{"content_type=FACE&step=1", binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, 0), 1), 2)},
		{"content_type=VERTEX", []byte{}}, // step 0: none
		{"content_type=COLOR&step=1", []byte{}},
	} {
		rec := routetest.Call(t, h.MeshData, http.MethodGet, "/experiment/e1/data/plugin/mesh/data?run=train&tag=cube&"+c.query, "")
		if got := routetest.Body(t, rec); !bytes.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.query, got, c.want)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "arraybuffer" {
			t.Errorf("%s: Content-Type %q", c.query, ct)
		}
	}
}
