package httpapi

import (
	"bytes"
	"cmp"
	"encoding/csv"
	"io"
	"math"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

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

func (h *Handler) loadHParams(r *request) (*hparamsData, error) {
	listed, err := h.listTensors(r, "hparams", nil)
	if err != nil {
		return nil, err
	}
	d := &hparamsData{}
	byRun := map[string]*hparamsSession{}
	for _, s := range listed {
		var pd hparamspb.HParamsPluginData
		if err := proto.Unmarshal(s.content, &pd); err != nil {
			continue
		}
		switch {
		case s.tag == hparamsExperimentTag && pd.GetExperiment() != nil:
			if d.experiment == nil {
				d.experiment = pd.GetExperiment()
			}
		case s.tag == hparamsStartTag && pd.GetSessionStartInfo() != nil:
			if byRun[s.run] == nil {
				byRun[s.run] = &hparamsSession{name: s.run}
			}
			byRun[s.run].start = pd.GetSessionStartInfo()
		case s.tag == hparamsEndTag && pd.GetSessionEndInfo() != nil:
			if byRun[s.run] == nil {
				byRun[s.run] = &hparamsSession{name: s.run}
			}
			byRun[s.run].end = pd.GetSessionEndInfo()
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

// experimentOf returns the explicit experiment, or one inferred from the
// sessions: their hparams (with their discrete domains) and, as metrics,
// the scalar tags written under the session runs.
func (h *Handler) experimentOf(r *request, d *hparamsData) (*hparamspb.Experiment, error) {
	if d.experiment != nil {
		return d.experiment, nil
	}
	exp := &hparamspb.Experiment{}
	values := map[string][]*structpb.Value{}
	for _, s := range d.sessions {
		for name, v := range s.start.GetHparams() {
			values[name] = append(values[name], v)
		}
	}
	names := make([]string, 0, len(values))
	for n := range values {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		exp.HparamInfos = append(exp.HparamInfos, inferHParam(n, values[n]))
	}
	if len(d.sessions) == 0 {
		return exp, nil
	}
	scalars, err := h.listScalars(r, "scalars", nil)
	if err != nil {
		return nil, err
	}
	seen := map[[2]string]bool{}
	for _, s := range scalars {
		for _, sess := range d.sessions {
			group, ok := strings.CutPrefix(s.run, sess.name)
			if !ok || (group != "" && !strings.HasPrefix(group, "/")) {
				continue
			}
			key := [2]string{strings.TrimPrefix(group, "/"), s.tag}
			if !seen[key] {
				seen[key] = true
				exp.MetricInfos = append(exp.MetricInfos, &hparamspb.MetricInfo{Name: &hparamspb.MetricName{Group: key[0], Tag: key[1]}})
			}
		}
	}
	slices.SortFunc(exp.MetricInfos, func(a, b *hparamspb.MetricInfo) int {
		return cmp.Or(cmp.Compare(a.GetName().GetGroup(), b.GetName().GetGroup()), cmp.Compare(a.GetName().GetTag(), b.GetName().GetTag()))
	})
	return exp, nil
}

// inferHParam describes an hparam from the values sessions gave it.
func inferHParam(name string, vals []*structpb.Value) *hparamspb.HParamInfo {
	info := &hparamspb.HParamInfo{Name: name}
	distinct := map[string]*structpb.Value{}
	kind := ""
	for _, v := range vals {
		k := ""
		switch v.GetKind().(type) {
		case *structpb.Value_NumberValue:
			k = "number"
		case *structpb.Value_StringValue:
			k = "string"
		case *structpb.Value_BoolValue:
			k = "bool"
		}
		if kind == "" {
			kind = k
		} else if kind != k {
			kind = "mixed"
		}
		b, _ := protojson.Marshal(v)
		distinct[string(b)] = v
	}
	info.Differs = len(distinct) > 1
	list := make([]*structpb.Value, 0, len(distinct))
	for _, v := range distinct {
		list = append(list, v)
	}
	slices.SortFunc(list, compareValues)
	switch kind {
	case "number":
		info.Type = hparamspb.DataType_DATA_TYPE_FLOAT64
	case "string":
		info.Type = hparamspb.DataType_DATA_TYPE_STRING
	case "bool":
		info.Type = hparamspb.DataType_DATA_TYPE_BOOL
	default:
		return info
	}
	info.Domain = &hparamspb.HParamInfo_DomainDiscrete{DomainDiscrete: &structpb.ListValue{Values: list}}
	return info
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
func (h *Handler) hparams(route string) routeFunc {
	return func(w http.ResponseWriter, r *request) error {
		var body []byte
		if r.Method == http.MethodPost {
			b, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			if err != nil {
				return errorf(http.StatusBadRequest, "reading the request: %v", err)
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
				return errorf(http.StatusBadRequest, "request is not a %s in proto3 JSON: %v", m.ProtoReflect().Descriptor().Name(), err)
			}
			return nil
		}
		d, err := h.loadHParams(r)
		if err != nil {
			return err
		}
		switch route {
		case "experiment":
			var req hparamspb.GetExperimentRequest
			if err := unmarshal(&req); err != nil {
				return err
			}
			exp, err := h.experimentOf(r, d)
			if err != nil {
				return err
			}
			if req.IncludeMetrics != nil && !req.GetIncludeMetrics() {
				exp = proto.Clone(exp).(*hparamspb.Experiment)
				exp.MetricInfos = nil
			}
			return writeProtoJSON(w, exp)
		case "session_groups":
			var req hparamspb.ListSessionGroupsRequest
			if err := unmarshal(&req); err != nil {
				return err
			}
			resp, err := h.sessionGroups(r, d, &req)
			if err != nil {
				return err
			}
			return writeProtoJSON(w, resp)
		default: // metric_evals
			var req hparamspb.ListMetricEvalsRequest
			if err := unmarshal(&req); err != nil {
				return err
			}
			run := metricRun(req.GetSessionName(), req.GetMetricName())
			series, err := h.readScalars(r, "scalars", one(run, req.GetMetricName().GetTag()), h.samples("scalars", samplesScalars))
			if err != nil {
				return err
			}
			if len(series) == 0 {
				return writeJSON(w, []any{})
			}
			return writeBody(w, "application/json", appendScalarJSON(nil, series[0].data))
		}
	}
}

func writeProtoJSON(w http.ResponseWriter, m proto.Message) error {
	b, err := protojson.Marshal(m)
	if err != nil {
		return err
	}
	return writeBody(w, "application/json", b)
}

// sessionGroups builds the groups (sessions sharing a group name), with
// their metric values from the sessions' latest scalars, then filters,
// sorts and pages them as the request says.
func (h *Handler) sessionGroups(r *request, d *hparamsData, req *hparamspb.ListSessionGroupsRequest) (*hparamspb.ListSessionGroupsResponse, error) {
	exp, err := h.experimentOf(r, d)
	if err != nil {
		return nil, err
	}
	metrics := exp.GetMetricInfos()
	last := map[[2]string]*hparamspb.MetricValue{} // (run, tag) → latest value
	if len(d.sessions) > 0 && len(metrics) > 0 && (req.IncludeMetrics == nil || req.GetIncludeMetrics()) {
		runs := map[string]bool{}
		tags := map[string]bool{}
		for _, s := range d.sessions {
			for _, m := range metrics {
				runs[metricRun(s.name, m.GetName())] = true
				tags[m.GetName().GetTag()] = true
			}
		}
		series, err := h.readScalars(r, "scalars", filter(keys(runs), keys(tags)), 1)
		if err != nil {
			return nil, err
		}
		for _, s := range series {
			if n := len(s.data.GetStep()); n > 0 {
				last[[2]string{s.run, s.tag}] = &hparamspb.MetricValue{
					Value: float64(s.data.GetValue()[n-1]), TrainingStep: int32(s.data.GetStep()[n-1]), WallTimeSecs: s.data.GetWallTime()[n-1]}
			}
		}
	}
	groups := map[string]*hparamspb.SessionGroup{}
	var order []string
	for _, s := range d.sessions {
		name := s.start.GetGroupName()
		if name == "" {
			name = s.name
		}
		status := hparamspb.Status_STATUS_RUNNING
		end := 0.0
		if s.end != nil {
			status, end = s.end.GetStatus(), s.end.GetEndTimeSecs()
		}
		if len(req.GetAllowedStatuses()) > 0 && !slices.Contains(req.GetAllowedStatuses(), status) {
			continue
		}
		sess := &hparamspb.Session{Name: s.name, StartTimeSecs: s.start.GetStartTimeSecs(), EndTimeSecs: end, Status: status,
			ModelUri: s.start.GetModelUri(), MonitorUrl: s.start.GetMonitorUrl()}
		for _, m := range metrics {
			if v := last[[2]string{metricRun(s.name, m.GetName()), m.GetName().GetTag()}]; v != nil {
				v = proto.Clone(v).(*hparamspb.MetricValue)
				v.Name = m.GetName()
				sess.MetricValues = append(sess.MetricValues, v)
			}
		}
		g := groups[name]
		if g == nil {
			g = &hparamspb.SessionGroup{Name: name, Hparams: s.start.GetHparams(), MonitorUrl: s.start.GetMonitorUrl()}
			groups[name] = g
			order = append(order, name)
		}
		g.Sessions = append(g.Sessions, sess)
	}
	var list []*hparamspb.SessionGroup
	for _, name := range order {
		g := groups[name]
		g.MetricValues = aggregate(g.Sessions, metrics, req)
		if keepGroup(g, req.GetColParams()) {
			list = append(list, g)
		}
	}
	sortGroups(list, req.GetColParams())
	resp := &hparamspb.ListSessionGroupsResponse{TotalSize: int32(len(list))}
	start := min(max(int(req.GetStartIndex()), 0), len(list))
	end := len(list)
	if req.GetSliceSize() > 0 {
		end = min(start+int(req.GetSliceSize()), len(list))
	}
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

// aggregate gives a group its metric values: with one session, its own;
// with AGGREGATION_MIN/MAX/MEDIAN, those of the session extreme (or
// median) in the aggregation metric; otherwise the mean per metric.
func aggregate(sessions []*hparamspb.Session, metrics []*hparamspb.MetricInfo, req *hparamspb.ListSessionGroupsRequest) []*hparamspb.MetricValue {
	if len(sessions) == 1 {
		return sessions[0].GetMetricValues()
	}
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
			return with[len(with)-1].GetMetricValues()
		}
		return with[(len(with)-1)/2].GetMetricValues()
	}
	var out []*hparamspb.MetricValue
	for _, m := range metrics {
		var sum, wall float64
		var step int32
		n := 0
		for _, s := range sessions {
			if v, ok := value(s, m.GetName()); ok {
				sum += v.GetValue()
				wall = max(wall, v.GetWallTimeSecs())
				step = max(step, v.GetTrainingStep())
				n++
			}
		}
		if n > 0 {
			out = append(out, &hparamspb.MetricValue{Name: m.GetName(), Value: sum / float64(n), TrainingStep: step, WallTimeSecs: wall})
		}
	}
	return out
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

// hparamsDownload serves the session groups table (every group, one row:
// its name, its hparams, its metric values) as CSV or JSON
// (?format=csv|json, default csv). The request's filters and sort may be
// given as ?request=, as for session_groups.
func (h *Handler) hparamsDownload(w http.ResponseWriter, r *request) error {
	format, err := downloadFormat(r, "csv", "json")
	if err != nil {
		return err
	}
	var req hparamspb.ListSessionGroupsRequest
	if q := r.URL.Query().Get("request"); q != "" {
		if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal([]byte(q), &req); err != nil {
			return errorf(http.StatusBadRequest, "request is not a ListSessionGroupsRequest in proto3 JSON: %v", err)
		}
	}
	req.StartIndex, req.SliceSize = 0, 0
	d, err := h.loadHParams(r)
	if err != nil {
		return err
	}
	exp, err := h.experimentOf(r, d)
	if err != nil {
		return err
	}
	resp, err := h.sessionGroups(r, d, &req)
	if err != nil {
		return err
	}
	header := []string{"Trial ID"}
	for _, hp := range exp.GetHparamInfos() {
		header = append(header, hp.GetName())
	}
	for _, m := range exp.GetMetricInfos() {
		name := m.GetName().GetTag()
		if g := m.GetName().GetGroup(); g != "" {
			name = g + "/" + name
		}
		header = append(header, name)
	}
	rows := [][]string{}
	for _, g := range resp.GetSessionGroups() {
		row := []string{g.GetName()}
		for _, hp := range exp.GetHparamInfos() {
			v, ok := g.GetHparams()[hp.GetName()]
			if ok {
				row = append(row, valueString(v))
			} else {
				row = append(row, "")
			}
		}
		for _, m := range exp.GetMetricInfos() {
			cell := ""
			for _, mv := range g.GetMetricValues() {
				if proto.Equal(mv.GetName(), m.GetName()) {
					cell = string(appendCSVFloat(nil, mv.GetValue()))
				}
			}
			row = append(row, cell)
		}
		rows = append(rows, row)
	}
	w.Header().Set("Content-Disposition", `attachment; filename="hparams_table.`+format+`"`)
	if format == "json" {
		return writeJSON(w, map[string]any{"header": header, "rows": rows})
	}
	var buf bytes.Buffer
	cw := csv.NewWriter(&buf)
	cw.Write(header)
	cw.WriteAll(rows)
	return writeBody(w, "text/csv; charset=utf-8", buf.Bytes())
}
