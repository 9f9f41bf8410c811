package route

import (
	"bytes"
	"math"
	"net/http"
	"strconv"

	datapb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/data"
)

// tagInfo is the {displayName, description} entry of TensorBoard's tags
// routes; description is sanitized HTML.
type TagInfo struct {
	DisplayName string `json:"displayName"`
	Description string `json:"description"`
}

// tagInfos groups listed series as run → tag → tagInfo.
func (h *Env) TagInfos(series []SeriesInfo) map[string]map[string]TagInfo {
	out := map[string]map[string]TagInfo{}
	for _, s := range series {
		if out[s.Run] == nil {
			out[s.Run] = map[string]TagInfo{}
		}
		out[s.Run][s.Tag] = TagInfo{DisplayName: s.DisplayName, Description: h.Markdown.ToSafeHTML(s.Description)}
	}
	return out
}

// appendScalarJSON appends [[wall_time, step, value], ...].
func AppendScalarJSON(b []byte, d *datapb.ScalarData) []byte {
	b = append(b, '[')
	for i, step := range d.GetStep() {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = AppendFloat(b, d.GetWallTime()[i])
		b = append(b, ',')
		b = strconv.AppendInt(b, step, 10)
		b = append(b, ',')
		b = AppendFloat(b, float64(d.GetValue()[i]))
		b = append(b, ']')
	}
	return append(b, ']')
}

// scalarJSON is a series as [[wall_time, step, value], ...], embeddable in
// encoding/json values.
type ScalarJSON struct{ D *datapb.ScalarData }

func (s ScalarJSON) MarshalJSON() ([]byte, error) { return AppendScalarJSON(nil, s.D), nil }

// appendCSVFloat appends f as Python's csv module writes a float.
func AppendCSVFloat(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, "nan"...)
	case math.IsInf(f, 1):
		return append(b, "inf"...)
	case math.IsInf(f, -1):
		return append(b, "-inf"...)
	}
	return AppendPythonFloat(b, f)
}

// scalarCSV writes a series as CSV under header.
func ScalarCSV(header string, d *datapb.ScalarData) []byte {
	var buf bytes.Buffer
	buf.WriteString(header + "\r\n")
	b := make([]byte, 0, 64)
	for i, step := range d.GetStep() {
		b = AppendCSVFloat(b[:0], d.GetWallTime()[i])
		b = append(b, ',')
		b = strconv.AppendInt(b, step, 10)
		b = append(b, ',')
		b = AppendCSVFloat(b, float64(d.GetValue()[i]))
		b = append(b, "\r\n"...)
		buf.Write(b)
	}
	return buf.Bytes()
}

// oneScalarSeries reads one (run, tag) of plugin at k points; 404 if it
// has none.
func (h *Env) OneScalarSeries(r *Request, plugin, run, tag string, k int64) (*datapb.ScalarData, error) {
	series, err := h.ReadScalars(r, plugin, One(run, tag), k)
	if err != nil {
		return nil, err
	}
	if len(series) == 0 {
		return nil, Errorf(http.StatusNotFound, "no scalar data for run=%q, tag=%q", run, tag)
	}
	return series[0].Data, nil
}
