package httpapi

import (
	"encoding/json"
	"net/http"
	"slices"
	"sync"

	datapb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/data"
)

func (h *Handler) environment(w http.ResponseWriter, r *request) error {
	resp, err := h.data.GetExperiment(r.ctx, &datapb.GetExperimentRequest{ExperimentId: r.eid}, h.callOpts...)
	if err != nil {
		return err
	}
	created := 0.0
	if ct := resp.GetCreationTime(); ct != nil {
		created = float64(ct.AsTime().UnixNano()) / 1e9
	}
	return writeJSON(w, map[string]any{
		"version":                Version,
		"data_location":          resp.GetDataLocation(),
		"window_title":           resp.GetName(),
		"experiment_name":        resp.GetName(),
		"experiment_description": resp.GetDescription(),
		"creation_time":          Float(created),
	})
}

func (h *Handler) logdir(w http.ResponseWriter, r *request) error {
	resp, err := h.data.GetExperiment(r.ctx, &datapb.GetExperimentRequest{ExperimentId: r.eid}, h.callOpts...)
	if err != nil {
		return err
	}
	return writeJSON(w, map[string]string{"logdir": resp.GetDataLocation()})
}

func (h *Handler) windowProperties(w http.ResponseWriter, r *request) error {
	resp, err := h.data.GetExperiment(r.ctx, &datapb.GetExperimentRequest{ExperimentId: r.eid}, h.callOpts...)
	if err != nil {
		return err
	}
	return writeJSON(w, map[string]string{"window_title": resp.GetName()})
}

// emptyList answers routes TensorBoard serves as [] outside its hosted
// product. The experiment is still checked, so a private experiment stays
// a 404.
func (h *Handler) emptyList(w http.ResponseWriter, r *request) error {
	if _, err := h.data.GetExperiment(r.ctx, &datapb.GetExperimentRequest{ExperimentId: r.eid}, h.callOpts...); err != nil {
		return err
	}
	return writeJSON(w, []any{})
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
func (h *Handler) pluginsListing(w http.ResponseWriter, r *request) error {
	resp, err := h.data.ListPlugins(r.ctx, &datapb.ListPluginsRequest{ExperimentId: r.eid}, h.callOpts...)
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
	return writeBody(w, "application/json", append(b, '}'))
}

// runs serves data/runs as TensorBoard's core plugin does: the list of
// run names, by start time. TensorBoard's original HTTP API document made
// it the run → tag-type index, which tbhub serves with ?format=index.
func (h *Handler) runs(w http.ResponseWriter, r *request) error {
	switch f := r.URL.Query().Get("format"); f {
	case "index":
		return h.runIndex(w, r)
	case "", "list":
		resp, err := h.data.ListRuns(r.ctx, &datapb.ListRunsRequest{ExperimentId: r.eid}, h.callOpts...)
		if err != nil {
			return err
		}
		names := make([]string, 0, len(resp.GetRuns()))
		for _, run := range resp.GetRuns() {
			names = append(names, run.GetName())
		}
		return writeJSON(w, names)
	default:
		return errorf(http.StatusBadRequest, "format=%q: want list or index", f)
	}
}

// runIndex is the legacy index: per run, its tags by tag type, whether it
// has a graph, and its first event's wall time.
func (h *Handler) runIndex(w http.ResponseWriter, r *request) error {
	var (
		runs                                      *datapb.ListRunsResponse
		scalars, hists, images, audio, graphs, md []seriesInfo
	)
	err := parallel(
		func() (err error) {
			runs, err = h.data.ListRuns(r.ctx, &datapb.ListRunsRequest{ExperimentId: r.eid}, h.callOpts...)
			return err
		},
		func() (err error) { scalars, err = h.listScalars(r, "scalars", nil); return err },
		func() (err error) { hists, err = h.listTensors(r, "histograms", nil); return err },
		func() (err error) { images, err = h.listBlobSequences(r, "images", nil); return err },
		func() (err error) { audio, err = h.listBlobSequences(r, "audio", nil); return err },
		func() (err error) { graphs, err = h.listBlobSequences(r, "graphs", nil); return err },
		func() (err error) {
			var a, b []seriesInfo
			if a, err = h.listBlobSequences(r, "graph_run_metadata", nil); err != nil {
				return err
			}
			b, err = h.listBlobSequences(r, "graph_tagged_run_metadata", nil)
			md = append(a, b...)
			return err
		},
	)
	if err != nil {
		return err
	}
	type entry struct {
		Histograms           []string `json:"histograms"`
		CompressedHistograms []string `json:"compressedHistograms"`
		Scalars              []string `json:"scalars"`
		Images               []string `json:"images"`
		Audio                []string `json:"audio"`
		Graph                bool     `json:"graph"`
		FirstEventTimestamp  *Float   `json:"firstEventTimestamp,omitempty"`
		RunMetadata          []string `json:"run_metadata"`
	}
	index := make(map[string]*entry, len(runs.GetRuns()))
	for _, run := range runs.GetRuns() {
		e := &entry{Histograms: []string{}, CompressedHistograms: []string{}, Scalars: []string{}, Images: []string{}, Audio: []string{}, RunMetadata: []string{}}
		if st := run.GetStartTime(); st != 0 {
			f := Float(st)
			e.FirstEventTimestamp = &f
		}
		index[run.GetName()] = e
	}
	add := func(series []seriesInfo, field func(*entry) *[]string) {
		for _, s := range series {
			if e := index[s.run]; e != nil {
				*field(e) = append(*field(e), s.tag)
			}
		}
	}
	add(scalars, func(e *entry) *[]string { return &e.Scalars })
	add(hists, func(e *entry) *[]string { return &e.Histograms })
	add(hists, func(e *entry) *[]string { return &e.CompressedHistograms })
	add(images, func(e *entry) *[]string { return &e.Images })
	add(audio, func(e *entry) *[]string { return &e.Audio })
	add(md, func(e *entry) *[]string { return &e.RunMetadata })
	for _, g := range graphs {
		if e := index[g.run]; e != nil && g.tag == runGraphTag {
			e.Graph = true
		}
	}
	return writeJSON(w, index)
}

// parallel runs fns at once and returns the first error.
func parallel(fns ...func() error) error {
	errs := make([]error, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Go(func() { errs[i] = fn() })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
