package httpapi

import (
	"bytes"
	"math"
	"net/http"
	"strconv"

	datapb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/data"
)

// tagInfo is the {displayName, description} entry of TensorBoard's tags
// routes; description is sanitized HTML.
type tagInfo struct {
	DisplayName string `json:"displayName"`
	Description string `json:"description"`
}

// tagInfos groups listed series as run → tag → tagInfo.
func tagInfos(series []seriesInfo) map[string]map[string]tagInfo {
	out := map[string]map[string]tagInfo{}
	for _, s := range series {
		if out[s.run] == nil {
			out[s.run] = map[string]tagInfo{}
		}
		out[s.run][s.tag] = tagInfo{DisplayName: s.displayName, Description: markdownToSafeHTML(s.description)}
	}
	return out
}

func (h *Handler) scalarTags(w http.ResponseWriter, r *request) error {
	series, err := h.listScalars(r, "scalars", nil)
	if err != nil {
		return err
	}
	return writeJSON(w, tagInfos(series))
}

// appendScalarJSON appends [[wall_time, step, value], ...].
func appendScalarJSON(b []byte, d *datapb.ScalarData) []byte {
	b = append(b, '[')
	for i, step := range d.GetStep() {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = appendFloat(b, d.GetWallTime()[i])
		b = append(b, ',')
		b = strconv.AppendInt(b, step, 10)
		b = append(b, ',')
		b = appendFloat(b, float64(d.GetValue()[i]))
		b = append(b, ']')
	}
	return append(b, ']')
}

// scalarJSON is a series as [[wall_time, step, value], ...], embeddable in
// encoding/json values.
type scalarJSON struct{ d *datapb.ScalarData }

func (s scalarJSON) MarshalJSON() ([]byte, error) { return appendScalarJSON(nil, s.d), nil }

// appendCSVFloat appends f as Python's csv module writes a float.
func appendCSVFloat(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, "nan"...)
	case math.IsInf(f, 1):
		return append(b, "inf"...)
	case math.IsInf(f, -1):
		return append(b, "-inf"...)
	}
	return appendPythonFloat(b, f)
}

// scalarCSV writes a series as CSV under header.
func scalarCSV(header string, d *datapb.ScalarData) []byte {
	var buf bytes.Buffer
	buf.WriteString(header + "\r\n")
	b := make([]byte, 0, 64)
	for i, step := range d.GetStep() {
		b = appendCSVFloat(b[:0], d.GetWallTime()[i])
		b = append(b, ',')
		b = strconv.AppendInt(b, step, 10)
		b = append(b, ',')
		b = appendCSVFloat(b, float64(d.GetValue()[i]))
		b = append(b, "\r\n"...)
		buf.Write(b)
	}
	return buf.Bytes()
}

// oneScalarSeries reads one (run, tag) of plugin at k points; 404 if it
// has none.
func (h *Handler) oneScalarSeries(r *request, plugin, run, tag string, k int64) (*datapb.ScalarData, error) {
	series, err := h.readScalars(r, plugin, one(run, tag), k)
	if err != nil {
		return nil, err
	}
	if len(series) == 0 {
		return nil, errorf(http.StatusNotFound, "no scalar data for run=%q, tag=%q", run, tag)
	}
	return series[0].data, nil
}

func (h *Handler) scalars(w http.ResponseWriter, r *request) error {
	run, tag, err := requireRunTag(r)
	if err != nil {
		return err
	}
	d, err := h.oneScalarSeries(r, "scalars", run, tag, h.samples("scalars", samplesScalars))
	if err != nil {
		return err
	}
	if r.URL.Query().Get("format") == "csv" {
		return writeBody(w, "text/csv; charset=utf-8", scalarCSV("Wall time,Step,Value", d))
	}
	return writeBody(w, "application/json", appendScalarJSON(nil, d))
}

func (h *Handler) scalarsMultirun(w http.ResponseWriter, r *request) error {
	if err := r.ParseForm(); err != nil {
		return errorf(http.StatusBadRequest, "bad form: %v", err)
	}
	tags := r.PostForm["tag"]
	if len(tags) != 1 {
		return errorf(http.StatusBadRequest, "exactly one tag is required, got %d", len(tags))
	}
	runs := r.PostForm["runs"]
	out := map[string]scalarJSON{}
	if len(runs) > 0 {
		series, err := h.readScalars(r, "scalars", filter(runs, tags), h.samples("scalars", samplesScalars))
		if err != nil {
			return err
		}
		for _, s := range series {
			out[s.run] = scalarJSON{s.data}
		}
	}
	return writeJSON(w, out)
}
