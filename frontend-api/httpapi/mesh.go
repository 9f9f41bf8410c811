package httpapi

import (
	"encoding/binary"
	"fmt"
	"math"
	"net/http"
	"strconv"

	"google.golang.org/protobuf/proto"

	meshpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/mesh"
)

// A mesh is written as up to three tensor series (vertices, faces,
// colors), each tagged with the mesh's name in its MeshPluginData. The
// mesh routes address a mesh by that name.

// meshComponent is one listed component series of a mesh.
type meshComponent struct {
	series seriesInfo
	data   *meshpb.MeshPluginData
}

// meshComponents lists the mesh series of run (all runs if run is nil),
// with their decoded plugin data.
func (h *Handler) meshComponents(r *request, runs []string) ([]meshComponent, error) {
	listed, err := h.listTensors(r, "mesh", filter(runs, nil))
	if err != nil {
		return nil, err
	}
	out := make([]meshComponent, 0, len(listed))
	for _, s := range listed {
		md := &meshpb.MeshPluginData{}
		if err := proto.Unmarshal(s.content, md); err != nil {
			continue
		}
		out = append(out, meshComponent{s, md})
	}
	return out, nil
}

type meshTagInfo struct {
	Samples int64 `json:"samples"`
}

func (h *Handler) meshTags(w http.ResponseWriter, r *request) error {
	comps, err := h.meshComponents(r, nil)
	if err != nil {
		return err
	}
	out := map[string]map[string]meshTagInfo{}
	for _, c := range comps {
		if out[c.series.run] == nil {
			out[c.series.run] = map[string]meshTagInfo{}
		}
		out[c.series.run][c.data.GetName()] = meshTagInfo{Samples: 1}
	}
	return writeJSON(w, out)
}

type meshEntry struct {
	WallTime    Float   `json:"wall_time"`
	Step        int64   `json:"step"`
	ContentType int32   `json:"content_type"`
	Components  uint32  `json:"components"`
	Config      string  `json:"config"`
	DataShape   []int32 `json:"data_shape"`
}

func (h *Handler) meshes(w http.ResponseWriter, r *request) error {
	run, name, err := requireRunTag(r)
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
		series, err := h.readTensors(r, "mesh", one(run, c.series.tag), h.samples("mesh", samplesMesh))
		if err != nil {
			return err
		}
		for _, s := range series {
			for i, step := range s.data.GetStep() {
				out = append(out, meshEntry{Float(s.data.GetWallTime()[i]), step, int32(c.data.GetContentType()),
					c.data.GetComponents(), c.data.GetJsonConfig(), shapeInt32(shapeOf(s.data.GetValue()[i]))})
			}
		}
	}
	return writeJSON(w, out)
}

func shapeInt32(shape []int64) []int32 {
	out := make([]int32, len(shape))
	for i, d := range shape {
		out[i] = int32(d)
	}
	return out
}

// meshData serves one component of a mesh at one step as little-endian
// binary: float32 vertices, int32 faces, uint8 colors.
func (h *Handler) meshData(w http.ResponseWriter, r *request) error {
	run, name, err := requireRunTag(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	ctName := q.Get("content_type")
	ct, ok := meshpb.MeshPluginData_ContentType_value[ctName]
	if !ok {
		return errorf(http.StatusBadRequest, "content_type=%q: want VERTEX, FACE or COLOR", ctName)
	}
	var step int64 = -1
	if s := q.Get("step"); s != "" {
		if step, err = strconv.ParseInt(s, 10, 64); err != nil {
			return errorf(http.StatusBadRequest, "step=%q: want an integer", s)
		}
	}
	comps, err := h.meshComponents(r, []string{run})
	if err != nil {
		return err
	}
	for _, c := range comps {
		if c.data.GetName() != name || int32(c.data.GetContentType()) != ct {
			continue
		}
		series, err := h.readTensors(r, "mesh", one(run, c.series.tag), h.samples("mesh", samplesMesh))
		if err != nil {
			return err
		}
		for _, s := range series {
			d := s.data
			for i := len(d.GetStep()) - 1; i >= 0; i-- {
				if step >= 0 && d.GetStep()[i] != step {
					continue
				}
				vals, err := tensorFloats(d.GetValue()[i])
				if err != nil {
					return fmt.Errorf("mesh %q %s step %d: %w", name, ctName, d.GetStep()[i], err)
				}
				// Addressed by step, not by blob key: not cacheable.
				return writeBody(w, "application/octet-stream", meshBytes(meshpb.MeshPluginData_ContentType(ct), vals))
			}
		}
	}
	return errorf(http.StatusNotFound, "no %s data for mesh %q of run %q", ctName, name, run)
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
