package httpapi

import (
	"bufio"
	"encoding/json"
	"math"
	"net/http"
	"strconv"

	"google.golang.org/protobuf/encoding/protojson"

	experimentsv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/experiments/v1"
	datapb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/data"
)

// tbhub's own routes under /api/: the caller's experiments, one
// experiment's metadata, and full-resolution downloads of a series.

func (h *Handler) needExperiments() error {
	if h.exps == nil {
		return errorf(http.StatusNotImplemented, "this server has no experiment service")
	}
	return nil
}

// apiListExperiments lists the caller's experiments (?scope=owned, the
// default, or shared), one page at a time (?page_size, ?page_token).
func (h *Handler) apiListExperiments(w http.ResponseWriter, r *request) error {
	if err := h.needExperiments(); err != nil {
		return err
	}
	q := r.URL.Query()
	req := &experimentsv1.ListExperimentsRequest{PageToken: q.Get("page_token")}
	switch q.Get("scope") {
	case "", "owned":
		req.Scope = experimentsv1.ListExperimentsRequest_SCOPE_OWNED
	case "shared":
		req.Scope = experimentsv1.ListExperimentsRequest_SCOPE_SHARED_WITH_ME
	default:
		return errorf(http.StatusBadRequest, "scope=%q: want owned or shared", q.Get("scope"))
	}
	if s := q.Get("page_size"); s != "" {
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil || n < 0 {
			return errorf(http.StatusBadRequest, "page_size=%q: want a non-negative integer", s)
		}
		req.PageSize = int32(n)
	}
	resp, err := h.exps.ListExperiments(r.ctx, req, h.callOpts...)
	if err != nil {
		return err
	}
	return writeProtoJSON(w, resp)
}

// apiGetExperiment is one experiment's metadata and counts.
func (h *Handler) apiGetExperiment(w http.ResponseWriter, r *request) error {
	if err := h.needExperiments(); err != nil {
		return err
	}
	resp, err := h.exps.GetExperiment(r.ctx, &experimentsv1.GetExperimentRequest{ExperimentId: r.eid}, h.callOpts...)
	if err != nil {
		return err
	}
	return writeProtoJSON(w, resp.GetExperiment())
}

// downloadFormat is the format query parameter of a download: csv or json.
func downloadFormat(r *request, allowed ...string) (string, error) {
	f := r.URL.Query().Get("format")
	if f == "" {
		f = allowed[0]
	}
	for _, a := range allowed {
		if f == a {
			return f, nil
		}
	}
	return "", errorf(http.StatusBadRequest, "format=%q: want one of %v", f, allowed)
}

// apiDownloadScalars streams every point of one scalar series
// (?run=&tag=[&plugin=scalars]) as CSV (wall_time,step,value) or as JSON
// ({"run","tag","points":{"steps","wall_times","values"}}, the layout of
// `tbup export`). The read service bounds one answer (about five million
// points by default).
func (h *Handler) apiDownloadScalars(w http.ResponseWriter, r *request) error {
	run, tag, err := requireRunTag(r)
	if err != nil {
		return err
	}
	format, err := downloadFormat(r, "csv", "json")
	if err != nil {
		return err
	}
	plugin := r.URL.Query().Get("plugin")
	if plugin == "" {
		plugin = "scalars"
	}
	series, err := h.readScalars(r, plugin, one(run, tag), math.MaxInt64)
	if err != nil {
		return err
	}
	if len(series) == 0 {
		return errorf(http.StatusNotFound, "no scalar series run=%q tag=%q in plugin %q", run, tag, plugin)
	}
	d := series[0].data
	name := "scalars." + format
	w.Header().Set("Content-Disposition", `attachment; filename="`+name+`"`)
	w.Header().Set("Cache-Control", "private, no-cache")
	bw := bufio.NewWriterSize(w, 64<<10)
	b := make([]byte, 0, 64)
	if format == "csv" {
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
		bw.WriteString("wall_time,step,value\r\n")
		for i, step := range d.GetStep() {
			b = appendCSVFloat(b[:0], d.GetWallTime()[i])
			b = append(b, ',')
			b = strconv.AppendInt(b, step, 10)
			b = append(b, ',')
			b = appendCSVFloat(b, float64(d.GetValue()[i]))
			b = append(b, "\r\n"...)
			bw.Write(b)
		}
		return bw.Flush()
	}
	w.Header().Set("Content-Type", "application/json")
	head, _ := json.Marshal(map[string]string{"run": run, "tag": tag})
	bw.Write(head[:len(head)-1])
	bw.WriteString(`,"points":{"steps":[`)
	for i, step := range d.GetStep() {
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.Write(strconv.AppendInt(b[:0], step, 10))
	}
	bw.WriteString(`],"wall_times":[`)
	for i, wt := range d.GetWallTime() {
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.Write(appendFloat(b[:0], wt))
	}
	bw.WriteString(`],"values":[`)
	for i, v := range d.GetValue() {
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.Write(appendFloat(b[:0], float64(v)))
	}
	bw.WriteString("]}}\n")
	return bw.Flush()
}

// apiDownloadTensors streams every point of one tensor series
// (?run=&tag=&plugin=) as JSON lines, one point per line:
// {"step","wall_time","tensor"} with the TensorProto in proto3 JSON.
func (h *Handler) apiDownloadTensors(w http.ResponseWriter, r *request) error {
	run, tag, err := requireRunTag(r)
	if err != nil {
		return err
	}
	plugin := r.URL.Query().Get("plugin")
	if plugin == "" {
		return errorf(http.StatusBadRequest, "the plugin query parameter is required (e.g. histograms)")
	}
	resp, err := h.data.ReadTensors(r.ctx, &datapb.ReadTensorsRequest{ExperimentId: r.eid, PluginFilter: &datapb.PluginFilter{PluginName: plugin},
		RunTagFilter: one(run, tag), Downsample: &datapb.Downsample{NumPoints: math.MaxInt64}}, h.callOpts...)
	if err != nil {
		return err
	}
	if len(resp.GetRuns()) == 0 {
		return errorf(http.StatusNotFound, "no tensor series run=%q tag=%q in plugin %q", run, tag, plugin)
	}
	d := resp.GetRuns()[0].GetTags()[0].GetData()
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Content-Disposition", `attachment; filename="tensors.jsonl"`)
	w.Header().Set("Cache-Control", "private, no-cache")
	bw := bufio.NewWriterSize(w, 64<<10)
	for i, step := range d.GetStep() {
		t, err := protojson.Marshal(d.GetValue()[i])
		if err != nil {
			return err
		}
		b := []byte(`{"step":`)
		b = strconv.AppendInt(b, step, 10)
		b = append(b, `,"wall_time":`...)
		b = appendFloat(b, d.GetWallTime()[i])
		b = append(b, `,"tensor":`...)
		b = append(b, t...)
		b = append(b, "}\n"...)
		bw.Write(b)
	}
	return bw.Flush()
}
