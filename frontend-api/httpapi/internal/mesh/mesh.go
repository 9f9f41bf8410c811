// Package mesh serves the mesh plugin's routes: meshes by name, their
// metadata by step, and one component's data as binary.
package mesh

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"

	"google.golang.org/protobuf/proto"

	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/route"
	meshpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/mesh"
)

// A mesh is written as up to three tensor series (vertices, faces,
// colors), each tagged with the mesh's name in its MeshPluginData. The
// mesh routes address a mesh by that name.

// meshComponent is one listed component series of a mesh.
type meshComponent struct {
	series route.SeriesInfo
	data   *meshpb.MeshPluginData
}

// meshComponents lists the mesh series of run (all runs if run is nil),
// with their decoded plugin data.
func (h Plugin) meshComponents(r *route.Request, runs []string) ([]meshComponent, error) {
	listed, err := h.ListTensors(r, "mesh", route.Filter(runs, nil))
	if err != nil {
		return nil, err
	}
	out := make([]meshComponent, 0, len(listed))
	for _, s := range listed {
		md := &meshpb.MeshPluginData{}
		if err := proto.Unmarshal(s.Content, md); err != nil {
			continue
		}
		out = append(out, meshComponent{s, md})
	}
	return out, nil
}

type meshTagInfo struct {
	Samples int64 `json:"samples"`
}

func (h Plugin) MeshTags(w http.ResponseWriter, r *route.Request) error {
	comps, err := h.meshComponents(r, nil)
	if err != nil {
		return err
	}
	out := map[string]map[string]meshTagInfo{}
	for _, c := range comps {
		if out[c.series.Run] == nil {
			out[c.series.Run] = map[string]meshTagInfo{}
		}
		out[c.series.Run][c.data.GetName()] = meshTagInfo{Samples: 1}
	}
	return route.WriteJSON(w, out)
}

type meshEntry struct {
	WallTime    route.Float `json:"wall_time"`
	Step        int64       `json:"step"`
	ContentType int32       `json:"content_type"`
	Components  uint32      `json:"components"`
	Config      string      `json:"config"`
	DataShape   []int32     `json:"data_shape"`
}

func (h Plugin) Meshes(w http.ResponseWriter, r *route.Request) error {
	run, name, err := route.RequireRunTag(r)
	if err != nil {
		return err
	}
	comps, err := h.meshComponents(r, []string{run})
	if err != nil {
		return err
	}
	out := []meshEntry{}
	for _, c := range comps {
		if c.data.GetName() != name {
			continue
		}
		series, err := h.ReadTensors(r, "mesh", route.One(run, c.series.Tag), h.Samples("mesh", route.SamplesMesh))
		if err != nil {
			return err
		}
		for _, s := range series {
			for i, step := range s.Data.GetStep() {
				out = append(out, meshEntry{route.Float(s.Data.GetWallTime()[i]), step, int32(c.data.GetContentType()),
					c.data.GetComponents(), c.data.GetJsonConfig(), shapeInt32(route.ShapeOf(s.Data.GetValue()[i]))})
			}
		}
	}
	// By step, as TensorBoard sorts them; within a step TensorBoard keeps
	// the order its components were first written in, which for its
	// summary writer is vertices, faces, colors: the content type order.
	slices.SortStableFunc(out, func(a, b meshEntry) int {
		return cmp.Or(cmp.Compare(a.Step, b.Step), cmp.Compare(a.ContentType, b.ContentType))
	})
	return route.WriteJSON(w, out)
}

func shapeInt32(shape []int64) []int32 {
	out := make([]int32, len(shape))
	for i, d := range shape {
		out[i] = int32(d)
	}
	return out
}

// meshData serves one component of a mesh at one step (?step=, 0 if
// absent, as TensorBoard defaults it) and one sample of its batch
// (?sample=, 0 if absent) as little-endian binary: float32 vertices, int32
// faces, uint8 colors; the content type is TensorBoard's "arraybuffer".
// Several series of the mesh with that content type at that step are
// concatenated, and none gives an empty answer, as in TensorBoard.
func (h Plugin) MeshData(w http.ResponseWriter, r *route.Request) error {
	run, name, err := route.RequireRunTag(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	ctName := q.Get("content_type")
	ct, ok := meshpb.MeshPluginData_ContentType_value[ctName]
	if !ok || ct == int32(meshpb.MeshPluginData_UNDEFINED) {
		return route.Errorf(http.StatusBadRequest, "Bad content_type")
	}
	var step float64
	if s := q.Get("step"); s != "" {
		if step, err = strconv.ParseFloat(s, 64); err != nil {
			return route.Errorf(http.StatusBadRequest, "step=%q: want a number", s)
		}
	}
	var sample int64
	if s := q.Get("sample"); s != "" {
		if sample, err = strconv.ParseInt(s, 10, 64); err != nil || sample < 0 {
			return route.Errorf(http.StatusBadRequest, "sample=%q: want an integer >= 0", s)
		}
	}
	comps, err := h.meshComponents(r, []string{run})
	if err != nil {
		return err
	}
	body := []byte{}
	for _, c := range comps {
		if c.data.GetName() != name || int32(c.data.GetContentType()) != ct {
			continue
		}
		series, err := h.ReadTensors(r, "mesh", route.One(run, c.series.Tag), h.Samples("mesh", route.SamplesMesh))
		if err != nil {
			return err
		}
		for _, s := range series {
			d := s.Data
			for i, st := range d.GetStep() {
				if float64(st) != step {
					continue
				}
				vals, err := route.TensorFloats(d.GetValue()[i])
				if err != nil {
					return fmt.Errorf("mesh %q %s step %d: %w", name, ctName, st, err)
				}
				shape := route.ShapeOf(d.GetValue()[i])
				if len(shape) > 1 && shape[0] > 0 {
					per := int64(len(vals)) / shape[0]
					if sample >= shape[0] {
						return route.Errorf(http.StatusBadRequest, "sample=%d: the mesh has %d", sample, shape[0])
					}
					vals = vals[sample*per : (sample+1)*per]
				}
				body = append(body, meshBytes(meshpb.MeshPluginData_ContentType(ct), vals)...)
			}
		}
	}
	// Addressed by step, not by blob key: not cacheable.
	return route.WriteBody(w, "arraybuffer", body)
}

func meshBytes(ct meshpb.MeshPluginData_ContentType, vals []float64) []byte {
	var b []byte
	for _, v := range vals {
		switch ct {
		case meshpb.MeshPluginData_FACE:
			b = binary.LittleEndian.AppendUint32(b, uint32(int32(v)))
		case meshpb.MeshPluginData_COLOR:
			b = append(b, uint8(v))
		default:
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(v)))
		}
	}
	return b
}

// Plugin serves the plugin's routes from the data of Env.
type Plugin struct{ *route.Env }
