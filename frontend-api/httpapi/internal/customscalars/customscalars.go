// Package customscalars serves the custom scalars plugin's routes: the
// merged layout, the scalar series matching a chart's regular expression,
// and one series as a download.
package customscalars

import (
	"net/http"
	"regexp"
	"slices"

	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/route"
	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	"google.golang.org/protobuf/proto"
)

// customScalarsConfigTag holds a run's custom scalars layout.
const customScalarsConfigTag = "custom_scalars__config__"

// customScalarsLayout merges every run's layout: categories with the same
// title become one, keeping each distinct chart once.
func (h Plugin) CustomScalarsLayout(w http.ResponseWriter, r *route.Request) error {
	series, err := h.ReadTensors(r, "custom_scalars", route.Filter(nil, []string{customScalarsConfigTag}), 1)
	if err != nil {
		return err
	}
	merged := &tbpb.Layout{}
	byTitle := map[string]*tbpb.Category{}
	for _, s := range series {
		vals := s.Data.GetValue()
		if len(vals) == 0 {
			continue
		}
		strs, err := route.TensorStrings(vals[len(vals)-1])
		if err != nil || len(strs) == 0 {
			continue
		}
		var layout tbpb.Layout
		if err := proto.Unmarshal(strs[0], &layout); err != nil {
			continue // a damaged layout hides itself, not the others
		}
		for _, c := range layout.GetCategory() {
			into := byTitle[c.GetTitle()]
			if into == nil {
				into = proto.Clone(c).(*tbpb.Category)
				byTitle[c.GetTitle()] = into
				merged.Category = append(merged.Category, into)
				continue
			}
			for _, chart := range c.GetChart() {
				if !slices.ContainsFunc(into.Chart, func(x *tbpb.Chart) bool { return proto.Equal(x, chart) }) {
					into.Chart = append(into.Chart, chart)
				}
			}
		}
	}
	if len(merged.Category) == 0 {
		return route.WriteJSON(w, map[string]any{})
	}
	return route.WriteTensorBoardProto(w, merged)
}

// customScalars serves the scalar series of one run whose tags match a
// regular expression (anchored at the start, as Python's re.match).
func (h Plugin) CustomScalars(w http.ResponseWriter, r *route.Request) error {
	run, tag, err := route.RequireRunTag(r)
	if err != nil {
		return err
	}
	re, err := regexp.Compile("^(?:" + tag + ")")
	if err != nil {
		return route.WriteJSON(w, map[string]any{"regex_valid": false, "tag_to_events": map[string]any{}})
	}
	listed, err := h.ListScalars(r, "scalars", route.Filter([]string{run}, nil))
	if err != nil {
		return err
	}
	var tags []string
	for _, s := range listed {
		if re.MatchString(s.Tag) {
			tags = append(tags, s.Tag)
		}
	}
	events := map[string]route.ScalarJSON{}
	if len(tags) > 0 {
		series, err := h.ReadScalars(r, "scalars", route.Filter([]string{run}, tags), h.Samples("scalars", route.SamplesScalars))
		if err != nil {
			return err
		}
		for _, s := range series {
			events[s.Tag] = route.ScalarJSON{D: s.Data}
		}
	}
	return route.WriteJSON(w, map[string]any{"regex_valid": true, "tag_to_events": events})
}

// customScalarsDownload serves one scalar series of a custom-scalars chart
// as JSON ([[wall_time, step, value]]) or CSV, for the chart's download
// links.
func (h Plugin) CustomScalarsDownload(w http.ResponseWriter, r *route.Request) error {
	run, tag, err := route.RequireRunTag(r)
	if err != nil {
		return err
	}
	format, err := route.DownloadFormat(r, "json", "csv")
	if err != nil {
		return err
	}
	d, err := h.OneScalarSeries(r, "scalars", run, tag, h.Samples("scalars", route.SamplesScalars))
	if err != nil {
		return err
	}
	if format == "csv" {
		return route.WriteBody(w, "text/csv; charset=utf-8", route.ScalarCSV("Wall time,Step,Value", d))
	}
	return route.WriteBody(w, "application/json", route.AppendScalarJSON(nil, d))
}

// Plugin serves the plugin's routes from the data of Env.
type Plugin struct{ *route.Env }
