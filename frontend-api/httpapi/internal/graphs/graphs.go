// Package graphs serves the graphs plugin's routes: which runs and tags
// have graphs, a graph (a run's GraphDef, a tagged run's RunMetadata
// graph, or a Keras model's conceptual graph) in TensorBoard's text format,
// and run metadata.
package graphs

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"

	"google.golang.org/protobuf/proto"

	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/route"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
)

// runGraphTag is the tag under which a run's GraphDef is stored (plugin
// "graphs").
const RunGraphTag = "__run_graph__"

type graphTagInfo struct {
	Tag             string `json:"tag"`
	ConceptualGraph bool   `json:"conceptual_graph"`
	OpGraph         bool   `json:"op_graph"`
	Profile         bool   `json:"profile"`
}

type graphRunInfo struct {
	Run      string                   `json:"run"`
	RunGraph bool                     `json:"run_graph"`
	Tags     map[string]*graphTagInfo `json:"tags"`
}

func (h *Plugin) GraphInfo(w http.ResponseWriter, r *route.Request) error {
	plugins := []string{"graphs", "graph_run_metadata", "graph_run_metadata_graph", "graph_keras_model", "graph_tagged_run_metadata"}
	listed := make([][]route.SeriesInfo, len(plugins))
	fns := make([]func() error, len(plugins))
	for i, p := range plugins {
		fns[i] = func() (err error) { listed[i], err = h.ListBlobSequences(r, p, nil); return err }
	}
	if err := route.Parallel(fns...); err != nil {
		return err
	}
	out := map[string]*graphRunInfo{}
	runInfo := func(run string) *graphRunInfo {
		if out[run] == nil {
			out[run] = &graphRunInfo{Run: run, Tags: map[string]*graphTagInfo{}}
		}
		return out[run]
	}
	tagInfo := func(run, tag string) *graphTagInfo {
		ri := runInfo(run)
		if ri.Tags[tag] == nil {
			ri.Tags[tag] = &graphTagInfo{Tag: tag}
		}
		return ri.Tags[tag]
	}
	for i, p := range plugins {
		for _, s := range listed[i] {
			switch p {
			case "graphs":
				if s.Tag == RunGraphTag {
					runInfo(s.Run).RunGraph = true
				}
			case "graph_run_metadata":
				ti := tagInfo(s.Run, s.Tag)
				ti.OpGraph, ti.Profile = true, true
			case "graph_run_metadata_graph":
				tagInfo(s.Run, s.Tag).OpGraph = true
			case "graph_keras_model":
				tagInfo(s.Run, s.Tag).ConceptualGraph = true
			case "graph_tagged_run_metadata":
				tagInfo(s.Run, s.Tag).Profile = true
			}
		}
	}
	return route.WriteJSON(w, out)
}

// latestBlobKey returns the key of the first blob of the latest point of
// (run, tag) in the first of plugins that has one; found is false if none
// does.
func (h *Plugin) latestBlobKey(r *route.Request, run, tag string, plugins ...string) (key string, found bool, err error) {
	for _, p := range plugins {
		series, err := h.ReadBlobSequences(r, p, route.One(run, tag), 1)
		if err != nil {
			return "", false, err
		}
		for _, s := range series {
			vals := s.Data.GetValues()
			if len(vals) == 0 || len(vals[len(vals)-1].GetBlobRefs()) == 0 {
				continue
			}
			return vals[len(vals)-1].GetBlobRefs()[0].GetBlobKey(), true, nil
		}
	}
	return "", false, nil
}

// answer serves the text made from the blob key by convert, as answers
// keeps it under the route's variant of that blob (the blob key changes
// whenever the blob can, so the key's answer never goes stale). Only
// callers that found key (so may read it) reach it.
func (h *Plugin) answer(w http.ResponseWriter, r *route.Request, variant, key string, convert func(blob []byte) ([]byte, error)) error {
	body, err := h.answers.get(r.Ctx, variant+"\x00"+key, func() ([]byte, error) {
		b, err := h.ReadBlob(r, key)
		if err != nil {
			return nil, err
		}
		return convert(b)
	})
	if err != nil {
		return err
	}
	return route.WriteBody(w, "text/x-protobuf; charset=utf-8", body)
}

// graph serves a run's graph, the op graph recorded under a tag, or (with
// conceptual=true) the Keras model under a tag converted to a GraphDef, as
// text-format GraphDef, optionally with large attribute values removed;
// within h's Limits.
func (h *Plugin) Graph(w http.ResponseWriter, r *route.Request) error {
	q := r.URL.Query()
	run := q.Get("run")
	if !q.Has("run") {
		return route.Errorf(http.StatusBadRequest, "the run query parameter is required")
	}
	limit := int64(-1)
	largeKey := q.Get("large_attrs_key")
	if s := q.Get("limit_attr_size"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 {
			return route.Errorf(http.StatusBadRequest, "limit_attr_size=%q: want a positive integer", s)
		}
		if largeKey == "" {
			return route.Errorf(http.StatusBadRequest, "large_attrs_key is required with limit_attr_size")
		}
		limit = n
	}
	tag := q.Get("tag")
	var (
		key, what string
		found     bool
		err       error
		decode    func(b []byte) (*tbpb.GraphDef, error)
	)
	variant := fmt.Sprintf("graph\x00%d\x00%s", limit, largeKey)
	switch {
	case q.Get("conceptual") == "true":
		if tag == "" {
			return route.Errorf(http.StatusBadRequest, "a conceptual graph needs the tag of a Keras model")
		}
		if key, found, err = h.latestBlobKey(r, run, tag, "graph_keras_model"); !found && err == nil {
			return route.Errorf(http.StatusNotFound, "run %q has no Keras model under tag %q", run, tag)
		}
		keras2 := q.Get("keras2_inputs") == "true"
		variant += fmt.Sprintf("\x00keras2=%t", keras2)
		what = fmt.Sprintf("the Keras model of run %q tag %q", run, tag)
		decode = func(b []byte) (*tbpb.GraphDef, error) {
			g, err := kerasGraph(b, keras2, h.lim)
			if errors.Is(err, errNotKeras) {
				return nil, route.Errorf(http.StatusBadRequest, "the stored Keras model of run %q tag %q is not a model config", run, tag)
			}
			return g, err
		}
	case tag == "":
		if key, found, err = h.latestBlobKey(r, run, RunGraphTag, "graphs"); !found && err == nil {
			return route.Errorf(http.StatusNotFound, "run %q has no graph", run)
		}
		what = fmt.Sprintf("the graph of run %q", run)
		decode = func(b []byte) (*tbpb.GraphDef, error) {
			g := &tbpb.GraphDef{}
			if err := proto.Unmarshal(b, g); err != nil {
				return nil, route.Errorf(http.StatusBadRequest, "the stored graph of run %q is not a GraphDef", run)
			}
			return g, nil
		}
	default:
		if key, found, err = h.latestBlobKey(r, run, tag, "graph_run_metadata_graph", "graph_run_metadata"); !found && err == nil {
			return route.Errorf(http.StatusNotFound, "run %q has no op graph under tag %q", run, tag)
		}
		what = fmt.Sprintf("the op graph of run %q tag %q", run, tag)
		decode = func(b []byte) (*tbpb.GraphDef, error) {
			md, err := h.runMetadata(b, run, tag)
			if err != nil {
				return nil, err
			}
			return functionGraphs(md), nil
		}
	}
	if err != nil {
		return err
	}
	return h.answer(w, r, variant, key, func(b []byte) ([]byte, error) {
		g, err := decode(b)
		if err != nil {
			return nil, err
		}
		if limit > 0 {
			limitAttrSize(g, limit, largeKey)
		}
		return h.lim.text(g, what)
	})
}

// runMetadata decodes the RunMetadata stored under (run, tag).
func (h *Plugin) runMetadata(b []byte, run, tag string) (*tbpb.RunMetadata, error) {
	md := &tbpb.RunMetadata{}
	if err := proto.Unmarshal(b, md); err != nil {
		return nil, route.Errorf(http.StatusBadRequest, "the stored run metadata of run %q tag %q is not a RunMetadata", run, tag)
	}
	return md, nil
}

// functionGraphs merges the pre-optimization graphs of a RunMetadata's
// function graphs into one GraphDef; with more than one, each graph's node
// names (and the inputs naming them) get a "graph_{i}/" prefix so they
// stay apart.
func functionGraphs(md *tbpb.RunMetadata) *tbpb.GraphDef {
	fgs := md.GetFunctionGraphs()
	if len(fgs) == 1 {
		return fgs[0].GetPreOptimizationGraph()
	}
	out := &tbpb.GraphDef{}
	for i, fg := range fgs {
		prefix := fmt.Sprintf("graph_%d/", i+1)
		for _, n := range fg.GetPreOptimizationGraph().GetNode() {
			n = proto.Clone(n).(*tbpb.NodeDef)
			n.Name = prefix + n.Name
			for j, in := range n.Input {
				if len(in) > 0 && in[0] == '^' {
					n.Input[j] = "^" + prefix + in[1:]
				} else {
					n.Input[j] = prefix + in
				}
			}
			out.Node = append(out.Node, n)
		}
	}
	return out
}

// limitAttrSize removes from every node the attribute values whose
// serialized size exceeds limit bytes, and lists their names under the
// attribute largeKey (TensorBoard's process_graph).
func limitAttrSize(g *tbpb.GraphDef, limit int64, largeKey string) {
	prune := func(nodes []*tbpb.NodeDef) {
		for _, n := range nodes {
			var large [][]byte
			keys := make([]string, 0, len(n.GetAttr()))
			for k := range n.GetAttr() {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if int64(proto.Size(n.Attr[k])) > limit {
					large = append(large, []byte(k))
					delete(n.Attr, k)
				}
			}
			if len(large) > 0 {
				n.Attr[largeKey] = &tbpb.AttrValue{Value: &tbpb.AttrValue_List{List: &tbpb.AttrValue_ListValue{S: large}}}
			}
		}
	}
	prune(g.GetNode())
	for _, f := range g.GetLibrary().GetFunction() {
		prune(f.GetNodeDef())
	}
}

// RunMetadata serves the RunMetadata recorded under (run, tag) as text
// format, within h's Limits.
func (h *Plugin) RunMetadata(w http.ResponseWriter, r *route.Request) error {
	run, tag, err := route.RequireRunTag(r)
	if err != nil {
		return err
	}
	key, found, err := h.latestBlobKey(r, run, tag, "graph_run_metadata", "graph_tagged_run_metadata")
	if err != nil {
		return err
	}
	if !found {
		return route.Errorf(http.StatusNotFound, "no run metadata for run=%q, tag=%q", run, tag)
	}
	return h.answer(w, r, "run_metadata", key, func(b []byte) ([]byte, error) {
		md, err := h.runMetadata(b, run, tag)
		if err != nil {
			return nil, err
		}
		return h.lim.text(md, fmt.Sprintf("the run metadata of run %q tag %q", run, tag))
	})
}

// Plugin serves the plugin's routes from the data of Env. Make it with New.
type Plugin struct {
	*route.Env
	lim     Limits
	answers *answers
}

// New returns the plugin, bounded by lim (DefaultLimits for each field
// that is zero).
func New(env *route.Env, lim Limits) *Plugin {
	lim = lim.OrDefaults()
	return &Plugin{Env: env, lim: lim, answers: newAnswers(lim)}
}
