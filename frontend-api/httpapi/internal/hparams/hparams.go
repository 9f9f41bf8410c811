// Package hparams serves the hparams plugin's routes: the experiment
// (written, or inferred from the sessions), session groups with their
// metrics, filters, sort and paging, metric evaluations, and the table as
// a CSV, JSON or LaTeX download, each as TensorBoard computes it.
package hparams

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/route"
	hparamspb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/hparams"
)

// The hparams plugin's data lives in the summary metadata of its series
// (tags _hparams_/experiment, _hparams_/session_start_info,
// _hparams_/session_end_info); metric values are the sessions' scalars.
// Requests and responses are the proto3 JSON of tensorboard.hparams's API
// messages.

const (
	hparamsExperimentTag = "_hparams_/experiment"
	hparamsStartTag      = "_hparams_/session_start_info"
	hparamsEndTag        = "_hparams_/session_end_info"
)

// hparamsData is what the hparams series of an experiment say.
type hparamsData struct {
	experiment *hparamspb.Experiment // written explicitly, or nil
	sessions   []*hparamsSession     // sorted by name
}

type hparamsSession struct {
	name  string // the run holding its session_start_info
	start *hparamspb.SessionStartInfo
	end   *hparamspb.SessionEndInfo // nil while running
}

func (h Plugin) loadHParams(r *route.Request) (*hparamsData, error) {
	listed, err := h.ListTensors(r, "hparams", nil)
	if err != nil {
		return nil, err
	}
	d := &hparamsData{}
	byRun := map[string]*hparamsSession{}
	for _, s := range listed {
		var pd hparamspb.HParamsPluginData
		if err := proto.Unmarshal(s.Content, &pd); err != nil {
			continue
		}
		switch {
		case s.Tag == hparamsExperimentTag && pd.GetExperiment() != nil:
			if d.experiment == nil {
				d.experiment = pd.GetExperiment()
			}
		case s.Tag == hparamsStartTag && pd.GetSessionStartInfo() != nil:
			if byRun[s.Run] == nil {
				byRun[s.Run] = &hparamsSession{name: s.Run}
			}
			byRun[s.Run].start = pd.GetSessionStartInfo()
		case s.Tag == hparamsEndTag && pd.GetSessionEndInfo() != nil:
			if byRun[s.Run] == nil {
				byRun[s.Run] = &hparamsSession{name: s.Run}
			}
			byRun[s.Run].end = pd.GetSessionEndInfo()
		}
	}
	for _, s := range byRun {
		if s.start != nil {
			d.sessions = append(d.sessions, s)
		}
	}
	slices.SortFunc(d.sessions, func(a, b *hparamsSession) int { return cmp.Compare(a.name, b.name) })
	return d, nil
}

// metricRun is the run holding a session's values of a metric.
func metricRun(session string, m *hparamspb.MetricName) string {
	if m.GetGroup() == "" || m.GetGroup() == "." {
		return session
	}
	return session + "/" + m.GetGroup()
}

// experimentOf returns the experiment as TensorBoard's get_experiment
// computes it: the explicit one (without its metric infos unless
// includeMetrics), else one inferred from the sessions' hparams and, as
// metrics, the scalar tags written under the session runs; an empty one
// when there is neither. hparamInfos are ordered with those whose values
// differ first, then by name, and cut to limit when it is positive.
func (h Plugin) experimentOf(r *route.Request, d *hparamsData, includeMetrics bool, limit int) (*hparamspb.Experiment, error) {
	var exp *hparamspb.Experiment
	if d.experiment != nil {
		exp = proto.Clone(d.experiment).(*hparamspb.Experiment)
		if !includeMetrics {
			exp.MetricInfos = nil
		}
	} else {
		exp = &hparamspb.Experiment{}
		values := map[string][]*structpb.Value{}
		for _, s := range d.sessions {
			for name, v := range s.start.GetHparams() {
				values[name] = append(values[name], v)
			}
		}
		for _, n := range slices.Sorted(maps.Keys(values)) {
			if info := inferHParam(n, values[n]); info != nil {
				exp.HparamInfos = append(exp.HparamInfos, info)
			}
		}
		if len(exp.HparamInfos) > 0 && includeMetrics {
			infos, err := h.inferMetrics(r, d)
			if err != nil {
				return nil, err
			}
			exp.MetricInfos = infos
		}
	}
	slices.SortStableFunc(exp.HparamInfos, func(a, b *hparamspb.HParamInfo) int {
		return cmp.Or(cmp.Compare(boolInt(!a.GetDiffers()), boolInt(!b.GetDiffers())), cmp.Compare(a.GetName(), b.GetName()))
	})
	if limit > 0 && len(exp.HparamInfos) > limit {
		exp.HparamInfos = exp.HparamInfos[:limit]
	}
	return exp, nil
}

// inferMetrics names a metric (group, tag) for each scalar series of a
// session run or of a run below one: the group is the run's path below the
// longest session run it is under. Sorted by tag, then group.
func (h Plugin) inferMetrics(r *route.Request, d *hparamsData) ([]*hparamspb.MetricInfo, error) {
	sessions := map[string]bool{}
	for _, s := range d.sessions {
		sessions[s.name] = true
	}
	scalars, err := h.ListScalars(r, "scalars", nil)
	if err != nil {
		return nil, err
	}
	seen := map[[2]string]bool{}
	for _, s := range scalars {
		session, ok := longestSessionOf(sessions, s.Run)
		if !ok {
			continue
		}
		group := strings.TrimPrefix(strings.TrimPrefix(s.Run, session), "/")
		seen[[2]string{s.Tag, group}] = true
	}
	names := slices.SortedFunc(maps.Keys(seen), func(a, b [2]string) int {
		return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]))
	})
	infos := make([]*hparamspb.MetricInfo, len(names))
	for i, n := range names {
		infos[i] = &hparamspb.MetricInfo{Name: &hparamspb.MetricName{Tag: n[0], Group: n[1]}}
	}
	return infos, nil
}

// longestSessionOf is the longest session run that is run or a directory
// above it.
func longestSessionOf(sessions map[string]bool, run string) (string, bool) {
	for p := run; ; {
		if sessions[p] {
			return p, true
		}
		i := strings.LastIndexByte(p, '/')
		if i < 0 {
			return "", false
		}
		p = p[:i]
	}
}

// inferHParam describes an hparam from the values sessions gave it, as
// TensorBoard does: its type is that of its values (string when they
// disagree; no info when none has a type), numbers get an interval
// domain, strings and booleans a discrete one (strings in sorted order:
// TensorBoard's is the iteration order of a Python set).
func inferHParam(name string, vals []*structpb.Value) *hparamspb.HParamInfo {
	info := &hparamspb.HParamInfo{Name: name}
	for _, v := range vals {
		t := valueType(v)
		if t == hparamspb.DataType_DATA_TYPE_UNSET {
			continue
		}
		if info.Type == hparamspb.DataType_DATA_TYPE_UNSET {
			info.Type = t
		} else if info.Type != t {
			info.Type = hparamspb.DataType_DATA_TYPE_STRING
		}
		if info.Type == hparamspb.DataType_DATA_TYPE_STRING {
			break
		}
	}
	switch info.Type {
	case hparamspb.DataType_DATA_TYPE_UNSET:
		return nil
	case hparamspb.DataType_DATA_TYPE_STRING:
		distinct := map[string]bool{}
		for _, v := range vals {
			if valueType(v) != hparamspb.DataType_DATA_TYPE_UNSET && serializable(v) {
				distinct[valueString(v)] = true
			}
		}
		list := &structpb.ListValue{}
		for _, s := range slices.Sorted(maps.Keys(distinct)) {
			list.Values = append(list.Values, structpb.NewStringValue(s))
		}
		info.Domain = &hparamspb.HParamInfo_DomainDiscrete{DomainDiscrete: list}
		info.Differs = len(distinct) > 1
	case hparamspb.DataType_DATA_TYPE_BOOL:
		distinct := map[bool]bool{}
		for _, v := range vals {
			distinct[v.GetBoolValue()] = true
		}
		list := &structpb.ListValue{}
		for _, b := range []bool{false, true} {
			if distinct[b] {
				list.Values = append(list.Values, structpb.NewBoolValue(b))
			}
		}
		info.Domain = &hparamspb.HParamInfo_DomainDiscrete{DomainDiscrete: list}
		info.Differs = len(distinct) > 1
	case hparamspb.DataType_DATA_TYPE_FLOAT64:
		lo, hi := math.Inf(1), math.Inf(-1)
		distinct := map[float64]bool{}
		for _, v := range vals {
			n := v.GetNumberValue()
			lo, hi = min(lo, n), max(hi, n)
			distinct[n] = true
		}
		info.Domain = &hparamspb.HParamInfo_DomainInterval{DomainInterval: &hparamspb.Interval{MinValue: lo, MaxValue: hi}}
		info.Differs = len(distinct) > 1
	}
	return info
}

// valueType is the hparams DataType of a value's kind (UNSET for null,
// lists and structs).
func valueType(v *structpb.Value) hparamspb.DataType {
	switch v.GetKind().(type) {
	case *structpb.Value_NumberValue:
		return hparamspb.DataType_DATA_TYPE_FLOAT64
	case *structpb.Value_StringValue:
		return hparamspb.DataType_DATA_TYPE_STRING
	case *structpb.Value_BoolValue:
		return hparamspb.DataType_DATA_TYPE_BOOL
	}
	return hparamspb.DataType_DATA_TYPE_UNSET
}

// serializable: not a NaN or infinite number, which JSON cannot carry.
func serializable(v *structpb.Value) bool {
	n, ok := v.GetKind().(*structpb.Value_NumberValue)
	return !ok || !math.IsNaN(n.NumberValue) && !math.IsInf(n.NumberValue, 0)
}

// compareValues orders values of one kind; missing values first.
func compareValues(a, b *structpb.Value) int {
	switch {
	case a == nil || b == nil:
		return cmp.Compare(boolInt(a != nil), boolInt(b != nil))
	}
	switch av := a.GetKind().(type) {
	case *structpb.Value_NumberValue:
		return cmp.Compare(av.NumberValue, b.GetNumberValue())
	case *structpb.Value_StringValue:
		return cmp.Compare(av.StringValue, b.GetStringValue())
	case *structpb.Value_BoolValue:
		return cmp.Compare(boolInt(av.BoolValue), boolInt(b.GetBoolValue()))
	}
	return 0
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// hparams returns the handler of one hparams route; the request message is
// the POST body or the GET request parameter.
func (h Plugin) HParams(name string) route.Func {
	return func(w http.ResponseWriter, r *route.Request) error {
		var body []byte
		if r.Method == http.MethodPost {
			b, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			if err != nil {
				return route.Errorf(http.StatusBadRequest, "reading the request: %v", err)
			}
			body = b
		} else {
			body = []byte(r.URL.Query().Get("request"))
		}
		if len(strings.TrimSpace(string(body))) == 0 {
			body = []byte("{}")
		}
		unmarshal := func(m proto.Message) error {
			if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(body, m); err != nil {
				return route.Errorf(http.StatusBadRequest, "request is not a %s in proto3 JSON: %v", m.ProtoReflect().Descriptor().Name(), err)
			}
			return nil
		}
		d, err := h.loadHParams(r)
		if err != nil {
			return err
		}
		switch name {
		case "experiment":
			var req hparamspb.GetExperimentRequest
			if err := unmarshal(&req); err != nil {
				return err
			}
			exp, err := h.experimentOf(r, d, req.IncludeMetrics == nil || req.GetIncludeMetrics(), int(req.GetHparamsLimit()))
			if err != nil {
				return err
			}
			return route.WriteTensorBoardProto(w, exp)
		case "session_groups":
			var req hparamspb.ListSessionGroupsRequest
			if err := unmarshal(&req); err != nil {
				return err
			}
			resp, err := h.sessionGroups(r, d, &req)
			if err != nil {
				return err
			}
			return route.WriteTensorBoardProto(w, resp)
		default: // metric_evals
			var req hparamspb.ListMetricEvalsRequest
			if err := unmarshal(&req); err != nil {
				return err
			}
			run := metricRun(req.GetSessionName(), req.GetMetricName())
			series, err := h.ReadScalars(r, "scalars", route.One(run, req.GetMetricName().GetTag()), h.Samples("scalars", route.SamplesScalars))
			if err != nil {
				return err
			}
			if len(series) == 0 {
				return route.Errorf(http.StatusNotFound, "Not found: No scalar data for run=%s, tag=%s", route.PyRepr(run), route.PyRepr(req.GetMetricName().GetTag()))
			}
			return route.WriteBody(w, "application/json", route.AppendScalarJSON(nil, series[0].Data))
		}
	}
}

// sessionGroups answers a ListSessionGroupsRequest as TensorBoard does:
// a session per run with a session start info (status and end time from
// its end info, STATUS_UNKNOWN and 0 without one), metric values from the
// sessions' latest scalars (unless include_metrics is false), sessions of
// an allowed status grouped by group name (the run's name when empty),
// groups filtered and sorted by the columns, their hparams cut to the
// columns included in the result when a column says, then paged:
// [start_index, start_index+slice_size).
func (h Plugin) sessionGroups(r *route.Request, d *hparamsData, req *hparamspb.ListSessionGroupsRequest) (*hparamspb.ListSessionGroupsResponse, error) {
	includeMetrics := req.IncludeMetrics == nil || req.GetIncludeMetrics()
	exp, err := h.experimentOf(r, d, includeMetrics, 0)
	if err != nil {
		return nil, err
	}
	metrics := exp.GetMetricInfos()
	last := map[[2]string]*hparamspb.MetricValue{} // (run, tag) → latest value
	if len(d.sessions) > 0 && len(metrics) > 0 && includeMetrics {
		runs := map[string]bool{}
		tags := map[string]bool{}
		for _, s := range d.sessions {
			for _, m := range metrics {
				runs[metricRun(s.name, m.GetName())] = true
				tags[m.GetName().GetTag()] = true
			}
		}
		series, err := h.ReadScalars(r, "scalars", route.Filter(keys(runs), keys(tags)), 1)
		if err != nil {
			return nil, err
		}
		for _, s := range series {
			if n := len(s.Data.GetStep()); n > 0 {
				last[[2]string{s.Run, s.Tag}] = &hparamspb.MetricValue{
					Value: float64(s.Data.GetValue()[n-1]), TrainingStep: int32(s.Data.GetStep()[n-1]), WallTimeSecs: s.Data.GetWallTime()[n-1]}
			}
		}
	}
	groups := map[string]*hparamspb.SessionGroup{}
	for _, s := range d.sessions {
		sess := &hparamspb.Session{Name: s.name, StartTimeSecs: s.start.GetStartTimeSecs(),
			ModelUri: s.start.GetModelUri(), MonitorUrl: s.start.GetMonitorUrl()}
		if s.end != nil {
			sess.Status, sess.EndTimeSecs = s.end.GetStatus(), s.end.GetEndTimeSecs()
		}
		if !slices.Contains(req.GetAllowedStatuses(), sess.Status) {
			continue
		}
		for _, m := range metrics {
			if v := last[[2]string{metricRun(s.name, m.GetName()), m.GetName().GetTag()}]; v != nil {
				v = proto.Clone(v).(*hparamspb.MetricValue)
				v.Name = m.GetName()
				sess.MetricValues = append(sess.MetricValues, v)
			}
		}
		name := cmp.Or(s.start.GetGroupName(), s.name)
		g := groups[name]
		if g == nil {
			g = &hparamspb.SessionGroup{Name: name, MonitorUrl: s.start.GetMonitorUrl(), Hparams: map[string]*structpb.Value{}}
			for k, v := range s.start.GetHparams() {
				if serializable(v) {
					g.Hparams[k] = v
				}
			}
			groups[name] = g
		}
		g.Sessions = append(g.Sessions, sess)
	}
	var list []*hparamspb.SessionGroup
	for _, name := range slices.Sorted(maps.Keys(groups)) {
		g := groups[name]
		slices.SortFunc(g.Sessions, func(a, b *hparamspb.Session) int { return cmp.Compare(a.GetName(), b.GetName()) })
		g.MetricValues = aggregate(g.Sessions, req)
		if keepGroup(g, req.GetColParams()) {
			list = append(list, g)
		}
	}
	sortGroups(list, req.GetColParams())
	if slices.ContainsFunc(req.GetColParams(), func(c *hparamspb.ColParams) bool { return c.IncludeInResult != nil }) {
		include := map[string]bool{}
		for _, c := range req.GetColParams() {
			if c.GetHparam() != "" && (c.IncludeInResult == nil || c.GetIncludeInResult()) {
				include[c.GetHparam()] = true
			}
		}
		for _, g := range list {
			maps.DeleteFunc(g.Hparams, func(k string, _ *structpb.Value) bool { return !include[k] })
		}
	}
	resp := &hparamspb.ListSessionGroupsResponse{TotalSize: int32(len(list))}
	start := min(max(int(req.GetStartIndex()), 0), len(list))
	end := min(max(start+int(req.GetSliceSize()), start), len(list))
	resp.SessionGroups = list[start:end]
	return resp, nil
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// aggregate gives a group its metric values as TensorBoard does: with
// AGGREGATION_MIN/MAX/MEDIAN, those of the session extreme (or median) in
// the aggregation metric; otherwise, per metric (in order of first
// appearance), the mean of the sessions' values, wall times and steps
// (the step's mean rounded down).
func aggregate(sessions []*hparamspb.Session, req *hparamspb.ListSessionGroupsRequest) []*hparamspb.MetricValue {
	value := func(s *hparamspb.Session, name *hparamspb.MetricName) (*hparamspb.MetricValue, bool) {
		for _, v := range s.GetMetricValues() {
			if proto.Equal(v.GetName(), name) {
				return v, true
			}
		}
		return nil, false
	}
	switch req.GetAggregationType() {
	case hparamspb.AggregationType_AGGREGATION_MIN, hparamspb.AggregationType_AGGREGATION_MAX, hparamspb.AggregationType_AGGREGATION_MEDIAN:
		var with []*hparamspb.Session
		for _, s := range sessions {
			if _, ok := value(s, req.GetAggregationMetric()); ok {
				with = append(with, s)
			}
		}
		if len(with) == 0 {
			return nil
		}
		slices.SortStableFunc(with, func(a, b *hparamspb.Session) int {
			va, _ := value(a, req.GetAggregationMetric())
			vb, _ := value(b, req.GetAggregationMetric())
			return cmp.Compare(va.GetValue(), vb.GetValue())
		})
		switch req.GetAggregationType() {
		case hparamspb.AggregationType_AGGREGATION_MIN:
			return with[0].GetMetricValues()
		case hparamspb.AggregationType_AGGREGATION_MAX:
			// The first of the largest, in session order, as Python's max.
			best := with[len(with)-1]
			bv, _ := value(best, req.GetAggregationMetric())
			for _, s := range with {
				if v, _ := value(s, req.GetAggregationMetric()); v.GetValue() == bv.GetValue() {
					return s.GetMetricValues()
				}
			}
			return best.GetMetricValues()
		}
		return with[(len(with)-1)/2].GetMetricValues()
	}
	type stats struct {
		name      *hparamspb.MetricName
		sum, wall float64
		steps     int64
		n         int
	}
	var order []*stats
	byName := map[[2]string]*stats{}
	for _, s := range sessions {
		for _, v := range s.GetMetricValues() {
			k := [2]string{v.GetName().GetGroup(), v.GetName().GetTag()}
			st := byName[k]
			if st == nil {
				st = &stats{name: v.GetName()}
				byName[k] = st
				order = append(order, st)
			}
			st.sum += v.GetValue()
			st.wall += v.GetWallTimeSecs()
			st.steps += int64(v.GetTrainingStep())
			st.n++
		}
	}
	out := make([]*hparamspb.MetricValue, len(order))
	for i, st := range order {
		n := float64(st.n)
		out[i] = &hparamspb.MetricValue{Name: st.name, Value: st.sum / n, WallTimeSecs: st.wall / n,
			TrainingStep: int32(floorDiv(st.steps, int64(st.n)))}
	}
	return out
}

// floorDiv is Python's //.
func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// colValue is a group's value in one column: an hparam or a metric.
func colValue(g *hparamspb.SessionGroup, c *hparamspb.ColParams) (*structpb.Value, bool) {
	if c.GetHparam() != "" {
		v, ok := g.GetHparams()[c.GetHparam()]
		return v, ok
	}
	for _, m := range g.GetMetricValues() {
		if proto.Equal(m.GetName(), c.GetMetric()) {
			return structpb.NewNumberValue(m.GetValue()), true
		}
	}
	return nil, false
}

// keepGroup applies the columns' filters.
func keepGroup(g *hparamspb.SessionGroup, cols []*hparamspb.ColParams) bool {
	for _, c := range cols {
		v, ok := colValue(g, c)
		if !ok {
			if c.GetExcludeMissingValues() {
				return false
			}
			continue
		}
		switch {
		case c.GetFilterRegexp() != "":
			re, err := regexp.Compile(c.GetFilterRegexp())
			if err != nil || !re.MatchString(valueString(v)) {
				return false
			}
		case c.GetFilterInterval() != nil:
			iv := c.GetFilterInterval()
			n, isNum := v.GetKind().(*structpb.Value_NumberValue)
			if !isNum || math.IsNaN(n.NumberValue) || n.NumberValue < iv.GetMinValue() || n.NumberValue > iv.GetMaxValue() {
				return false
			}
		case c.GetFilterDiscrete() != nil:
			if !slices.ContainsFunc(c.GetFilterDiscrete().GetValues(), func(x *structpb.Value) bool { return proto.Equal(x, v) }) {
				return false
			}
		}
	}
	return true
}

func valueString(v *structpb.Value) string {
	if s, ok := v.GetKind().(*structpb.Value_StringValue); ok {
		return s.StringValue
	}
	b, _ := protojson.Marshal(v)
	return string(b)
}

// sortGroups orders groups by the columns that ask for an order, in
// column order, then by name.
func sortGroups(groups []*hparamspb.SessionGroup, cols []*hparamspb.ColParams) {
	slices.SortStableFunc(groups, func(a, b *hparamspb.SessionGroup) int {
		for _, c := range cols {
			if c.GetOrder() == hparamspb.SortOrder_ORDER_UNSPECIFIED {
				continue
			}
			va, okA := colValue(a, c)
			vb, okB := colValue(b, c)
			if okA != okB {
				if okA == c.GetMissingValuesFirst() {
					return 1
				}
				return -1
			}
			if n := compareValues(va, vb); n != 0 {
				if c.GetOrder() == hparamspb.SortOrder_ORDER_DESC {
					return -n
				}
				return n
			}
		}
		return cmp.Compare(a.GetName(), b.GetName())
	})
}

// hparamsDownload serves the session groups table as TensorBoard's
// download_data does: ?format=csv|json|latex, ?columnsVisibility= (a JSON
// list of booleans, one per column; columns past its end are dropped) and
// ?request= (a ListSessionGroupsRequest: statuses, filters, sort, paging).
// One column per hparam (its display name, else its name), then per
// metric (its display name, else its tag); one row per group. tbhub's
// defaults where TensorBoard fails: csv, every column, every group.
func (h Plugin) HParamsDownload(w http.ResponseWriter, r *route.Request) error {
	format, err := route.DownloadFormat(r, "csv", "json", "latex")
	if err != nil {
		return err
	}
	q := r.URL.Query()
	req := &hparamspb.ListSessionGroupsRequest{
		AllowedStatuses: []hparamspb.Status{hparamspb.Status_STATUS_UNKNOWN, hparamspb.Status_STATUS_SUCCESS, hparamspb.Status_STATUS_FAILURE, hparamspb.Status_STATUS_RUNNING},
		SliceSize:       math.MaxInt32,
	}
	if v := q.Get("request"); v != "" {
		req = &hparamspb.ListSessionGroupsRequest{}
		if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal([]byte(v), req); err != nil {
			return route.Errorf(http.StatusBadRequest, "request is not a ListSessionGroupsRequest in proto3 JSON: %v", err)
		}
	}
	var visible []bool
	if v := q.Get("columnsVisibility"); v != "" {
		if err := json.Unmarshal([]byte(v), &visible); err != nil {
			return route.Errorf(http.StatusBadRequest, "columnsVisibility: want a JSON list of booleans: %v", err)
		}
	}
	d, err := h.loadHParams(r)
	if err != nil {
		return err
	}
	exp, err := h.experimentOf(r, d, req.IncludeMetrics == nil || req.GetIncludeMetrics(), 0)
	if err != nil {
		return err
	}
	resp, err := h.sessionGroups(r, d, req)
	if err != nil {
		return err
	}
	columns := func(row []any) []any {
		if visible == nil {
			return row
		}
		out := []any{}
		for i, v := range row[:min(len(row), len(visible))] {
			if visible[i] {
				out = append(out, v)
			}
		}
		return out
	}
	var header []any
	for _, hp := range exp.GetHparamInfos() {
		header = append(header, cmp.Or(hp.GetDisplayName(), hp.GetName()))
	}
	for _, m := range exp.GetMetricInfos() {
		header = append(header, cmp.Or(m.GetDisplayName(), m.GetName().GetTag()))
	}
	header = columns(header)
	rows := [][]any{}
	for _, g := range resp.GetSessionGroups() {
		var row []any
		for _, hp := range exp.GetHparamInfos() {
			switch v := g.GetHparams()[hp.GetName()].GetKind().(type) {
			case *structpb.Value_NumberValue:
				row = append(row, route.Float(v.NumberValue))
			case *structpb.Value_StringValue:
				row = append(row, v.StringValue)
			case *structpb.Value_BoolValue:
				row = append(row, v.BoolValue)
			default:
				row = append(row, "")
			}
		}
		for _, m := range exp.GetMetricInfos() {
			var cell any
			for _, mv := range g.GetMetricValues() {
				if mv.GetName().GetGroup() == m.GetName().GetGroup() && mv.GetName().GetTag() == m.GetName().GetTag() {
					cell = route.Float(mv.GetValue())
				}
			}
			row = append(row, cell)
		}
		rows = append(rows, columns(row))
	}
	switch format {
	case "json":
		return route.WriteJSON(w, map[string]any{"header": header, "rows": rows})
	case "latex":
		return route.WriteBody(w, "application/x-latex", hparamsLaTeX(header, rows))
	}
	var b []byte
	for _, row := range append([][]any{header}, rows...) {
		for i, v := range row {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendPythonCSVField(b, v)
		}
		b = append(b, "\r\n"...)
	}
	return route.WriteBody(w, "text/csv; charset=utf-8", b)
}

// appendPythonCSVField appends v as Python's csv module writes str(v):
// floats in repr form, booleans True/False, None empty, quoted only when
// holding a comma, a quote or a line break.
func appendPythonCSVField(b []byte, v any) []byte {
	var s string
	switch v := v.(type) {
	case nil:
	case route.Float:
		s = string(route.AppendCSVFloat(nil, float64(v)))
	case bool:
		s = "False"
		if v {
			s = "True"
		}
	case string:
		s = v
	}
	if !strings.ContainsAny(s, ",\"\r\n") {
		return append(b, s...)
	}
	return append(append(append(b, '"'), strings.ReplaceAll(s, `"`, `""`)...), '"')
}

// hparamsLaTeX writes the table as TensorBoard's LaTeX download: numbers
// in three significant digits (a power of ten as \cdot 10^{e}), booleans
// as the integers Python takes them for, missing metrics as -, strings
// with _ and % escaped.
func hparamsLaTeX(header []any, rows [][]any) []byte {
	cell := func(v any) string {
		switch v := v.(type) {
		case nil:
			return "-"
		case bool:
			if v {
				return "$1$"
			}
			return "$0$"
		case route.Float:
			f := float64(v)
			switch {
			case math.IsNaN(f):
				return `$\mathrm{NaN}$`
			case math.IsInf(f, 1):
				return `$+\infty$`
			case math.IsInf(f, -1):
				return `$-\infty$`
			}
			sci := fmt.Sprintf("%.3g", f)
			if c, e, ok := strings.Cut(sci, "e"); ok {
				var exp int
				fmt.Sscan(e, &exp)
				return fmt.Sprintf(`$%s\cdot 10^{%d}$`, c, exp)
			}
			return "$" + sci + "$"
		case string:
			return strings.NewReplacer("_", `\_`, "%", `\%`).Replace(v)
		}
		return ""
	}
	line := func(row []any) string {
		cells := make([]string, len(row))
		for i, v := range row {
			cells[i] = cell(v)
		}
		return strings.Join(cells, " & ")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\\begin{table}[tbp]\n\\begin{tabular}{%s}\n", strings.Repeat("l", len(header)))
	b.WriteString(line(header) + " \\\\ \\hline\n")
	for _, row := range rows {
		b.WriteString(line(row) + " \\\\\n")
	}
	b.WriteString("\\hline\n\\end{tabular}\n\\end{table}\n")
	return []byte(b.String())
}

// Plugin serves the plugin's routes from the data of Env.
type Plugin struct{ *route.Env }

// RunHParams returns the hparams of each of runs that belongs to a session
// (the session's run, or a run below it such as "session/eval": the
// longest session run above it), as the session's start info gives them;
// runs of no session are left out.
func (h Plugin) RunHParams(r *route.Request, runs []string) (map[string]map[string]*structpb.Value, error) {
	d, err := h.loadHParams(r)
	if err != nil {
		return nil, err
	}
	sessions := map[string]*hparamsSession{}
	names := map[string]bool{}
	for _, s := range d.sessions {
		sessions[s.name], names[s.name] = s, true
	}
	out := map[string]map[string]*structpb.Value{}
	for _, run := range runs {
		if name, ok := longestSessionOf(names, run); ok && len(sessions[name].start.GetHparams()) > 0 {
			out[run] = sessions[name].start.GetHparams()
		}
	}
	return out, nil
}
