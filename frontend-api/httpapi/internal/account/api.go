// Package account serves tbhub's own routes under /api/ (the caller's
// experiments, an experiment's metadata, full-resolution downloads of a
// series, managing experiments, access and tokens), apart from
// TensorBoard's routes. Every route calls the services' RPCs with the
// caller's credential, so who may do what is decided there, once.
package account

import (
	authv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/auth/v1"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"

	"bufio"
	"context"
	"encoding/json"
	"math"
	"net/http"
	"strconv"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/route"
	experimentsv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/experiments/v1"
	datapb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/data"
)

// API holds the clients the routes call: the read service (Env), the
// experiment service (nil: the routes answer 501), and the write service's
// writer and auth services (nil: the management routes answer 501).
type API struct {
	*route.Env
	Experiments experimentsv1.ExperimentServiceClient
	Writer      servicepb.TensorBoardWriterServiceClient
	Auth        authv1.AuthServiceClient
}

func (h API) needExperiments() error {
	if h.Experiments == nil {
		return route.Errorf(http.StatusNotImplemented, "this server has no experiment service")
	}
	return nil
}

// apiListExperiments lists the caller's experiments (?scope=owned, the
// default, or shared), or the public gallery (?scope=public, for anyone,
// searched with ?q=), one page at a time (?page_size, ?page_token).
func (h API) ListExperiments(w http.ResponseWriter, r *route.Request) error {
	if err := h.needExperiments(); err != nil {
		return err
	}
	q := r.URL.Query()
	var size int32
	if s := q.Get("page_size"); s != "" {
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil || n < 0 {
			return route.Errorf(http.StatusBadRequest, "page_size=%q: want a non-negative integer", s)
		}
		size = int32(n)
	}
	if q.Get("scope") == "public" {
		resp, err := h.Experiments.ListPublicExperiments(r.Ctx, &experimentsv1.ListPublicExperimentsRequest{
			Query: q.Get("q"), PageSize: size, PageToken: q.Get("page_token")}, h.CallOpts...)
		if err != nil {
			return err
		}
		h.withHTML(r, resp.GetExperiments()...)
		return route.WriteProtoJSON(w, resp)
	}
	req := &experimentsv1.ListExperimentsRequest{PageToken: q.Get("page_token"), PageSize: size}
	switch q.Get("scope") {
	case "", "owned":
		req.Scope = experimentsv1.ListExperimentsRequest_SCOPE_OWNED
	case "shared":
		req.Scope = experimentsv1.ListExperimentsRequest_SCOPE_SHARED_WITH_ME
	default:
		return route.Errorf(http.StatusBadRequest, "scope=%q: want owned, shared or public", q.Get("scope"))
	}
	resp, err := h.Experiments.ListExperiments(r.Ctx, req, h.CallOpts...)
	if err != nil {
		return err
	}
	h.withHTML(r, resp.GetExperiments()...)
	return route.WriteProtoJSON(w, resp)
}

// withHTML sets each experiment's description_html: its description
// rendered and sanitized by the HTTP API's one markdown renderer, within
// one time budget for the request (a description that misses it is shown
// as escaped text).
func (h API) withHTML(r *route.Request, exps ...*experimentsv1.Experiment) {
	ctx, cancel := context.WithTimeout(r.Ctx, h.Markdown.Limits().RenderTimeout)
	defer cancel()
	for _, e := range exps {
		e.DescriptionHtml = h.Markdown.Render(ctx, e.GetDescription())
	}
}

// apiGetExperiment is one experiment's metadata and counts.
func (h API) GetExperiment(w http.ResponseWriter, r *route.Request) error {
	if err := h.needExperiments(); err != nil {
		return err
	}
	// The page shows the experiment and its counts, never its runs: the
	// runs are not read (100,000 of them took 1.57 s for 341 bytes).
	resp, err := h.Experiments.GetExperiment(r.Ctx, &experimentsv1.GetExperimentRequest{ExperimentId: r.EID, OmitRuns: true}, h.CallOpts...)
	if err != nil {
		return err
	}
	h.withHTML(r, resp.GetExperiment())
	return route.WriteProtoJSON(w, resp.GetExperiment())
}

// apiDownloadScalars streams every point of one scalar series
// (?run=&tag=[&plugin=scalars]) as CSV (wall_time,step,value) or as JSON
// ({"run","tag","points":{"steps","wall_times","values"}}, the layout of
// `tbup export`). The read service bounds one answer (about five million
// points by default).
func (h API) DownloadScalars(w http.ResponseWriter, r *route.Request) error {
	run, tag, err := route.RequireRunTag(r)
	if err != nil {
		return err
	}
	format, err := route.DownloadFormat(r, "csv", "json")
	if err != nil {
		return err
	}
	plugin := r.URL.Query().Get("plugin")
	if plugin == "" {
		plugin = "scalars"
	}
	series, err := h.ReadScalars(r, plugin, route.One(run, tag), math.MaxInt64)
	if err != nil {
		return err
	}
	if len(series) == 0 {
		return route.Errorf(http.StatusNotFound, "no scalar series run=%q tag=%q in plugin %q", run, tag, plugin)
	}
	d := series[0].Data
	name := "scalars." + format
	w.Header().Set("Content-Disposition", `attachment; filename="`+name+`"`)
	w.Header().Set("Cache-Control", "private, no-cache")
	bw := bufio.NewWriterSize(w, 64<<10)
	b := make([]byte, 0, 64)
	if format == "csv" {
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
		bw.WriteString("wall_time,step,value\r\n")
		for i, step := range d.GetStep() {
			b = route.AppendCSVFloat(b[:0], d.GetWallTime()[i])
			b = append(b, ',')
			b = strconv.AppendInt(b, step, 10)
			b = append(b, ',')
			b = route.AppendCSVFloat(b, float64(d.GetValue()[i]))
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
		bw.Write(route.AppendFloat(b[:0], wt))
	}
	bw.WriteString(`],"values":[`)
	for i, v := range d.GetValue() {
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.Write(route.AppendFloat(b[:0], float64(v)))
	}
	bw.WriteString("]}}\n")
	return bw.Flush()
}

// apiDownloadTensors streams every point of one tensor series
// (?run=&tag=&plugin=) as JSON lines, one point per line:
// {"step","wall_time","tensor"} with the TensorProto in proto3 JSON.
func (h API) DownloadTensors(w http.ResponseWriter, r *route.Request) error {
	run, tag, err := route.RequireRunTag(r)
	if err != nil {
		return err
	}
	plugin := r.URL.Query().Get("plugin")
	if plugin == "" {
		return route.Errorf(http.StatusBadRequest, "the plugin query parameter is required (e.g. histograms)")
	}
	resp, err := h.Data.ReadTensors(r.Ctx, &datapb.ReadTensorsRequest{ExperimentId: r.EID, PluginFilter: &datapb.PluginFilter{PluginName: plugin},
		RunTagFilter: route.One(run, tag), Downsample: &datapb.Downsample{NumPoints: math.MaxInt64}}, h.CallOpts...)
	if err != nil {
		return err
	}
	if len(resp.GetRuns()) == 0 {
		return route.Errorf(http.StatusNotFound, "no tensor series run=%q tag=%q in plugin %q", run, tag, plugin)
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
		b = route.AppendFloat(b, d.GetWallTime()[i])
		b = append(b, `,"tensor":`...)
		b = append(b, t...)
		b = append(b, "}\n"...)
		bw.Write(b)
	}
	return bw.Flush()
}
