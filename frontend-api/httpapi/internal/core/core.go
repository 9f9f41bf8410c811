// Package core serves TensorBoard's core routes: data/environment,
// plugins_listing, runs (the list, or tbhub's index with ?format=index),
// logdir, window_properties, experiments and experiment_runs.
package core

import (
	"encoding/json"
	"net/http"
	"slices"

	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/graphs"
	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/route"
	datapb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/data"
)

func (h Plugin) Environment(w http.ResponseWriter, r *route.Request) error {
	resp, err := h.Data.GetExperiment(r.Ctx, &datapb.GetExperimentRequest{ExperimentId: r.EID}, h.CallOpts...)
	if err != nil {
		return err
	}
	created := 0.0
	if ct := resp.GetCreationTime(); ct != nil {
		created = float64(ct.AsTime().UnixNano()) / 1e9
	}
	return route.WriteJSON(w, map[string]any{
		"version":                route.Version,
		"data_location":          resp.GetDataLocation(),
		"window_title":           resp.GetName(),
		"experiment_name":        resp.GetName(),
		"experiment_description": resp.GetDescription(),
		"creation_time":          route.Float(created),
	})
}

func (h Plugin) Logdir(w http.ResponseWriter, r *route.Request) error {
	resp, err := h.Data.GetExperiment(r.Ctx, &datapb.GetExperimentRequest{ExperimentId: r.EID}, h.CallOpts...)
	if err != nil {
		return err
	}
	return route.WriteJSON(w, map[string]string{"logdir": resp.GetDataLocation()})
}

func (h Plugin) WindowProperties(w http.ResponseWriter, r *route.Request) error {
	resp, err := h.Data.GetExperiment(r.Ctx, &datapb.GetExperimentRequest{ExperimentId: r.EID}, h.CallOpts...)
	if err != nil {
		return err
	}
	return route.WriteJSON(w, map[string]string{"window_title": resp.GetName()})
}

// EmptyList answers routes TensorBoard serves as [] outside its hosted
// product. The experiment is still checked, so a private experiment stays
// a 404.
func (h Plugin) EmptyList(w http.ResponseWriter, r *route.Request) error {
	if _, err := h.Data.GetExperiment(r.Ctx, &datapb.GetExperimentRequest{ExperimentId: r.EID}, h.CallOpts...); err != nil {
		return err
	}
	return route.WriteJSON(w, []any{})
}

// Notifications answers the notification center of TensorBoard's
// frontend: none. (TensorBoard redirects to the notes its web bundle
// carries about its own releases.) The experiment is checked, as above.
func (h Plugin) Notifications(w http.ResponseWriter, r *route.Request) error {
	if _, err := h.Data.GetExperiment(r.Ctx, &datapb.GetExperimentRequest{ExperimentId: r.EID}, h.CallOpts...); err != nil {
		return err
	}
	return route.WriteJSON(w, map[string][]any{"notifications": {}})
}

// dashboard is one entry of data/plugins_listing: a TensorBoard frontend
// plugin and the data plugins that make it active.
type dashboard struct {
	name          string
	tabName       string
	element       string // custom element name; "" for Angular (NG_COMPONENT) plugins
	disableReload bool
	dataPlugins   []string // none: never active (plugins of a local TensorBoard)
}

// dashboards in TensorBoard's order (its default plugin list), which its
// frontend keeps for the tabs.
var dashboards = []dashboard{
	{"timeseries", "Time Series", "", false, []string{"scalars", "histograms", "images"}},
	{"scalars", "scalars", "tf-scalar-dashboard", false, []string{"scalars"}},
	{"custom_scalars", "Custom Scalars", "tf-custom-scalar-dashboard", false, []string{"custom_scalars"}},
	{"images", "images", "tf-image-dashboard", false, []string{"images"}},
	{"audio", "audio", "tf-audio-dashboard", false, []string{"audio"}},
	{"debugger-v2", "Debugger V2", "", false, nil},
	{"graphs", "graphs", "tf-graph-dashboard", true, []string{"graphs", "graph_run_metadata", "graph_run_metadata_graph", "graph_keras_model", "graph_tagged_run_metadata"}},
	{"distributions", "distributions", "tf-distribution-dashboard", false, []string{"histograms"}},
	{"histograms", "histograms", "tf-histogram-dashboard", false, []string{"histograms"}},
	{"text", "text", "tf-text-dashboard", false, []string{"text"}},
	{"pr_curves", "PR Curves", "tf-pr-curve-dashboard", false, []string{"pr_curves"}},
	{"profile_redirect", "Profile", "tf-profile-redirect-dashboard", false, nil},
	{"hparams", "hparams", "tf-hparams-dashboard", false, []string{"hparams"}},
	{"mesh", "mesh", "mesh-dashboard", false, []string{"mesh"}},
	{"wit_redirect", "What-If Tool", "tf-wit-redirect-dashboard", false, nil},
}

type pluginEntry struct {
	DisableReload    bool              `json:"disable_reload"`
	Enabled          bool              `json:"enabled"`
	LoadingMechanism map[string]string `json:"loading_mechanism"`
	RemoveDOM        bool              `json:"remove_dom"`
	TabName          string            `json:"tab_name"`
}

// pluginsListing answers TensorBoard's entries in TensorBoard's order
// (a JSON object whose key order the frontend keeps).
func (h Plugin) PluginsListing(w http.ResponseWriter, r *route.Request) error {
	resp, err := h.Data.ListPlugins(r.Ctx, &datapb.ListPluginsRequest{ExperimentId: r.EID}, h.CallOpts...)
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, p := range resp.GetPlugins() {
		have[p.GetName()] = true
	}
	b := []byte{'{'}
	for i, d := range dashboards {
		mechanism := map[string]string{"type": "NG_COMPONENT"}
		if d.element != "" {
			mechanism = map[string]string{"type": "CUSTOM_ELEMENT", "element_name": d.element}
		}
		entry, err := json.Marshal(pluginEntry{DisableReload: d.disableReload, LoadingMechanism: mechanism, TabName: d.tabName,
			Enabled: slices.ContainsFunc(d.dataPlugins, func(p string) bool { return have[p] })})
		if err != nil {
			return err
		}
		if i > 0 {
			b = append(b, ',')
		}
		key, _ := json.Marshal(d.name)
		b = append(append(append(b, key...), ':'), entry...)
	}
	return route.WriteBody(w, "application/json", append(b, '}'))
}

// runs serves data/runs as TensorBoard's core plugin does: the list of
// run names, by start time. TensorBoard's original HTTP API document made
// it the run → tag-type index, which tbhub serves with ?format=index.
func (h Plugin) Runs(w http.ResponseWriter, r *route.Request) error {
	switch f := r.URL.Query().Get("format"); f {
	case "index":
		return h.runIndex(w, r)
	case "", "list":
		names, err := h.RunNames(r)
		if err != nil {
			return err
		}
		return route.WriteJSON(w, names)
	default:
		return route.Errorf(http.StatusBadRequest, "format=%q: want list or index", f)
	}
}

// runIndex is the legacy index: per run, its tags by tag type, whether it
// has a graph, and its first event's wall time.
func (h Plugin) runIndex(w http.ResponseWriter, r *route.Request) error {
	var (
		runs                                         *datapb.ListRunsResponse
		scalars, hists, images, audio, graphRuns, md []route.SeriesInfo
	)
	err := route.Parallel(
		func() (err error) {
			runs, err = h.Data.ListRuns(r.Ctx, &datapb.ListRunsRequest{ExperimentId: r.EID}, h.CallOpts...)
			return err
		},
		func() (err error) { scalars, err = h.ListScalars(r, "scalars", nil); return err },
		func() (err error) { hists, err = h.ListTensors(r, "histograms", nil); return err },
		func() (err error) { images, err = h.ListBlobSequences(r, "images", nil); return err },
		func() (err error) { audio, err = h.ListBlobSequences(r, "audio", nil); return err },
		func() (err error) { graphRuns, err = h.ListBlobSequences(r, "graphs", nil); return err },
		func() (err error) {
			var a, b []route.SeriesInfo
			if a, err = h.ListBlobSequences(r, "graph_run_metadata", nil); err != nil {
				return err
			}
			b, err = h.ListBlobSequences(r, "graph_tagged_run_metadata", nil)
			md = append(a, b...)
			return err
		},
	)
	if err != nil {
		return err
	}
	type entry struct {
		Histograms           []string     `json:"histograms"`
		CompressedHistograms []string     `json:"compressedHistograms"`
		Scalars              []string     `json:"scalars"`
		Images               []string     `json:"images"`
		Audio                []string     `json:"audio"`
		Graph                bool         `json:"graph"`
		FirstEventTimestamp  *route.Float `json:"firstEventTimestamp"` // null: no event yet
		RunMetadata          []string     `json:"run_metadata"`
	}
	index := make(map[string]*entry, len(runs.GetRuns()))
	for _, run := range runs.GetRuns() {
		e := &entry{Histograms: []string{}, CompressedHistograms: []string{}, Scalars: []string{}, Images: []string{}, Audio: []string{}, RunMetadata: []string{}}
		if st := run.GetStartTime(); st != 0 {
			f := route.Float(st)
			e.FirstEventTimestamp = &f
		}
		index[run.GetName()] = e
	}
	add := func(series []route.SeriesInfo, field func(*entry) *[]string) {
		for _, s := range series {
			if e := index[s.Run]; e != nil {
				*field(e) = append(*field(e), s.Tag)
			}
		}
	}
	add(scalars, func(e *entry) *[]string { return &e.Scalars })
	add(hists, func(e *entry) *[]string { return &e.Histograms })
	add(hists, func(e *entry) *[]string { return &e.CompressedHistograms })
	add(images, func(e *entry) *[]string { return &e.Images })
	add(audio, func(e *entry) *[]string { return &e.Audio })
	add(md, func(e *entry) *[]string { return &e.RunMetadata })
	for _, g := range graphRuns {
		if e := index[g.Run]; e != nil && g.Tag == graphs.RunGraphTag {
			e.Graph = true
		}
	}
	return route.WriteJSON(w, index)
}

// Plugin serves the plugin's routes from the data of Env.
type Plugin struct{ *route.Env }
