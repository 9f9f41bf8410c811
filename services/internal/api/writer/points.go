package writer

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
	"github.com/tbhub/tbhub/services/internal/policy/rpcerr"
	"github.com/tbhub/tbhub/services/internal/policy/tenancy"
	"github.com/tbhub/tbhub/services/internal/storage/store"
	"github.com/tbhub/tbhub/services/internal/storage/walltime"
)

// Writes of points follow TensorBoard.dev's semantics: the points of a
// series are the union over requests, keyed by step (a rewritten step
// replaces the point); a series' metadata is fixed by the first write;
// repeating a request changes nothing. A request is checked point by
// point: bad points (and tags or runs with bad names, which take their
// points with them) are reported together in one INVALID_ARGUMENT with a
// google.rpc.BadRequest detail naming run, tag, step and reason, and every
// good point of the same request is stored. The stock uploader drops a
// batch after an error, so rejecting whole batches would lose good data.

// checkRunTag validates a run or tag name.
func checkRunTag(kind, name string) string {
	switch {
	case name == "":
		return kind + " name is empty"
	case !utf8.ValidString(name):
		return kind + " name is not valid UTF-8"
	case len(name) > MaxRunTagBytes:
		return fmt.Sprintf("%s name has %d bytes; the limit is %d", kind, len(name), MaxRunTagBytes)
	}
	return ""
}

// seriesOf builds the series a tag's points go to, from its metadata.
// want is the class of the RPC; a metadata naming another class, or
// larger than maxBytes serialized, is bad.
func seriesOf(run, tag string, md *tbpb.SummaryMetadata, want store.DataClass, maxBytes int64) (store.TimeSeries, string) {
	ts := store.TimeSeries{Run: run, Tag: tag, DataClass: want}
	if md == nil {
		return ts, ""
	}
	if c := store.DataClass(md.GetDataClass()); c != store.DataClassUnknown && c != want {
		return ts, fmt.Sprintf("summary metadata declares data class %v, not %v", c, want)
	}
	raw, err := proto.Marshal(md)
	if err != nil {
		return ts, "summary metadata cannot be serialized"
	}
	if int64(len(raw)) > maxBytes {
		return ts, fmt.Sprintf("summary metadata has %d bytes; the metadata limit is %d", len(raw), maxBytes)
	}
	ts.PluginName = md.GetPluginData().GetPluginName()
	ts.SummaryMetadata = raw
	ts.DisplayName = md.GetDisplayName()
	ts.Description = md.GetSummaryDescription()
	return ts, ""
}

// violations collects the rejected items of one request.
type violations []rpcerr.Violation

func (v *violations) add(field, run, tag string, step *int64, reason string) {
	where := fmt.Sprintf("run %q", run)
	if tag != "" {
		where += fmt.Sprintf(" tag %q", tag)
	}
	if step != nil {
		where += fmt.Sprintf(" step %d", *step)
	}
	*v = append(*v, rpcerr.Violation{Field: field, Reason: where + ": " + reason})
}

// pointTag and pointRun are the shapes WriteScalarRequest and
// WriteTensorRequest share.
type pointTag[P any] interface {
	GetName() string
	GetMetadata() *tbpb.SummaryMetadata
	GetPoints() []P
}

type pointRun[P any, T pointTag[P]] interface {
	GetName() string
	GetTags() []T
}

// pointBatch validates the runs of a point request and converts their good
// points with convert (which reports a bad point by returning a reason),
// returning one batch entry per good tag, built by entry, and what the
// batch asks of the quotas.
func pointBatch[P any, T pointTag[P], R pointRun[P, T], SP any, B any](runs []R, class store.DataClass, maxMetadata int64, bad *violations,
	convert func(p P) (SP, int64, string), entry func(ts store.TimeSeries, points []SP) B) (batch []B, accepted admission) {
	for i, r := range runs {
		if reason := checkRunTag("run", r.GetName()); reason != "" {
			bad.add(fmt.Sprintf("runs[%d].name", i), r.GetName(), "", nil, reason)
			continue
		}
		for j, t := range r.GetTags() {
			field := fmt.Sprintf("runs[%d].tags[%d]", i, j)
			if reason := checkRunTag("tag", t.GetName()); reason != "" {
				bad.add(field+".name", r.GetName(), t.GetName(), nil, reason)
				continue
			}
			ts, reason := seriesOf(r.GetName(), t.GetName(), t.GetMetadata(), class, maxMetadata)
			if reason != "" {
				bad.add(field+".metadata", r.GetName(), t.GetName(), nil, reason)
				continue
			}
			points := make([]SP, 0, len(t.GetPoints()))
			for k, pt := range t.GetPoints() {
				sp, step, reason := convert(pt)
				if reason != "" {
					bad.add(fmt.Sprintf("%s.points[%d]", field, k), r.GetName(), t.GetName(), &step, reason)
					continue
				}
				points = append(points, sp)
			}
			if len(points) > 0 {
				batch = append(batch, entry(ts, points))
				accepted.points += int64(len(points))
				accepted.metadataBytes += int64(len(ts.SummaryMetadata))
				accepted.runs = append(accepted.runs, r.GetName())
			}
		}
	}
	return batch, accepted
}

// admission is what a write asks of the quotas: its points, the bytes
// of the series metadata it carries (stored if the series is new), and
// the runs it writes to (created if new).
type admission struct {
	points, metadataBytes int64
	runs                  []string
}

func countPoints[P any, T pointTag[P], R pointRun[P, T]](runs []R) int64 {
	var n int64
	for _, r := range runs {
		for _, t := range r.GetTags() {
			n += int64(len(t.GetPoints()))
		}
	}
	return n
}

// withQuotas returns ctx carrying the quotas the store checks, exactly,
// inside the transactions that change what they count (store.WithQuotas).
func (s *Server) withQuotas(ctx context.Context) context.Context {
	l := s.limits.Limits()
	return store.WithQuotas(ctx, store.Quotas{Points: l.MaxPointsPerUser, Experiments: l.MaxExperimentsPerUser,
		Tokens: l.MaxTokensPerUser, PendingGrants: l.MaxPendingGrantsPerUser})
}

// withBlobQuota returns ctx carrying the byte quota the store checks,
// exactly for blob bytes, when a blob's row grows: the user's other
// stored bytes are this instance's count (store.Quotas.OtherBytes).
func (s *Server) withBlobQuota(ctx context.Context, userID string) (context.Context, error) {
	limit := s.limits.Limits().MaxBlobBytesPerUser
	if limit <= 0 {
		return ctx, nil
	}
	other, err := s.limits.StoredBesideBlobs(ctx, userID)
	if err != nil {
		return nil, err
	}
	return store.WithQuotas(ctx, store.Quotas{Bytes: limit, OtherBytes: other}), nil
}

// storeRefused returns err, the result of a store write under withQuotas.
// If the store refused it over a quota, the enforcer's cached usage, which
// counted the refused write and was behind the store, is read again.
func (s *Server) storeRefused(userID string, err error) error {
	if errors.Is(err, store.ErrQuotaExceeded) {
		s.limits.UsageChanged(userID)
	}
	return err
}

// writePoints admits a request of n points (rate and per-request limits),
// lets collect validate it into a batch, admits the accepted points under
// the points quota and their series' metadata under the byte quota, and
// writes them. Bad points are reported after the good ones are stored.
func (s *Server) writePoints(ctx context.Context, n int64, collect func(*violations) (admission, func(context.Context) error)) error {
	p, err := tenancy.Caller(ctx)
	if err != nil {
		return err
	}
	if err := s.limits.Allow(p.UserID); err != nil {
		return err
	}
	if max := s.limits.Limits().MaxPointsPerRequest; n > max {
		return rpcerr.New(codes.ResourceExhausted, "points per request limit is %d; the request has %d", max, n)
	}
	var bad violations
	accepted, write := collect(&bad)
	if accepted.points > 0 {
		eid, err := tenancy.AuthorizedExperiment(ctx)
		if err != nil {
			return err
		}
		runBytes, err := s.newRuns(ctx, eid.ID, accepted.runs)
		if err != nil {
			return err
		}
		// The enforcer's cached usage is a fast pre-check; the authority is
		// the store, which counts the points and checks the quota in the
		// transaction that writes them, exactly across instances.
		if err := s.limits.ReservePointWrite(ctx, p.UserID, accepted.points, accepted.metadataBytes+runBytes); err != nil {
			return err
		}
		if err := s.storeRefused(p.UserID, write(s.withQuotas(ctx))); err != nil {
			return err
		}
	}
	if len(bad) > 0 {
		return rpcerr.BadPoints("some points were rejected, the others stored", bad)
	}
	return nil
}

func (w *writerService) WriteScalar(ctx context.Context, req *servicepb.WriteScalarRequest) (*servicepb.WriteScalarResponse, error) {
	e, err := tenancy.AuthorizedExperiment(ctx)
	if err != nil {
		return nil, err
	}
	if err := requestBudget("WriteScalar", req, w.s.limits.Limits().MaxScalarRequestBytes); err != nil {
		return nil, err
	}
	err = w.s.writePoints(ctx, countPoints(req.GetRuns()), func(bad *violations) (admission, func(context.Context) error) {
		batch, accepted := pointBatch(req.GetRuns(), store.DataClassScalar, w.s.limits.Limits().MaxMetadataBytes, bad,
			func(pt *servicepb.ScalarPoint) (store.ScalarPoint, int64, string) {
				wall, reason := walltime.Seconds(pt.GetWallTime())
				return store.ScalarPoint{Step: pt.GetStep(), WallTime: wall, Value: pt.GetValue()}, pt.GetStep(), reason
			},
			func(ts store.TimeSeries, points []store.ScalarPoint) store.ScalarSeries {
				return store.ScalarSeries{Series: ts, Points: points}
			})
		return accepted, func(ctx context.Context) error {
			return writeAvoidingConflicts(ctx, w.s.st, e.ID, store.DataClassScalar, batch,
				func(b *store.ScalarSeries) *store.TimeSeries { return &b.Series },
				func(b []store.ScalarSeries) error { return w.s.st.WriteScalars(ctx, e.ID, b) }, bad)
		}
	})
	if err != nil {
		return nil, err
	}
	return &servicepb.WriteScalarResponse{}, nil
}

func (w *writerService) WriteTensor(ctx context.Context, req *servicepb.WriteTensorRequest) (*servicepb.WriteTensorResponse, error) {
	e, err := tenancy.AuthorizedExperiment(ctx)
	if err != nil {
		return nil, err
	}
	if err := requestBudget("WriteTensor", req, w.s.limits.Limits().MaxTensorRequestBytes); err != nil {
		return nil, err
	}
	maxPoint := w.s.limits.Limits().MaxTensorPointBytes
	err = w.s.writePoints(ctx, countPoints(req.GetRuns()), func(bad *violations) (admission, func(context.Context) error) {
		batch, accepted := pointBatch(req.GetRuns(), store.DataClassTensor, w.s.limits.Limits().MaxMetadataBytes, bad,
			func(pt *servicepb.TensorPoint) (store.TensorPoint, int64, string) {
				wall, reason := walltime.Seconds(pt.GetWallTime())
				if reason != "" {
					return store.TensorPoint{}, pt.GetStep(), reason
				}
				tp, reason := tensorPoint(pt.GetValue(), maxPoint)
				tp.Step, tp.WallTime = pt.GetStep(), wall
				return tp, pt.GetStep(), reason
			},
			func(ts store.TimeSeries, points []store.TensorPoint) store.TensorSeries {
				return store.TensorSeries{Series: ts, Points: points}
			})
		return accepted, func(ctx context.Context) error {
			return writeAvoidingConflicts(ctx, w.s.st, e.ID, store.DataClassTensor, batch,
				func(b *store.TensorSeries) *store.TimeSeries { return &b.Series },
				func(b []store.TensorSeries) error { return w.s.st.WriteTensors(ctx, e.ID, b) }, bad)
		}
	})
	if err != nil {
		return nil, err
	}
	return &servicepb.WriteTensorResponse{}, nil
}

// requestBudget enforces the request size advertised in the handshake
// (max_scalar_request_size, max_tensor_request_size).
func requestBudget(method string, req proto.Message, max int64) error {
	if n := int64(proto.Size(req)); n > max {
		return rpcerr.New(codes.ResourceExhausted, "%s request has %d bytes; the limit advertised in the handshake is %d", method, n, max)
	}
	return nil
}

// tensorPoint serializes a tensor value and copies the fields the store
// indexes.
func tensorPoint(v *tbpb.TensorProto, maxBytes int64) (store.TensorPoint, string) {
	if v == nil {
		return store.TensorPoint{}, "value is missing"
	}
	raw, err := proto.Marshal(v)
	if err != nil {
		return store.TensorPoint{}, "value cannot be serialized"
	}
	if int64(len(raw)) > maxBytes {
		return store.TensorPoint{}, fmt.Sprintf("tensor has %d bytes; the tensor point limit is %d", len(raw), maxBytes)
	}
	tp := store.TensorPoint{DType: int32(v.GetDtype()), Tensor: raw}
	for _, d := range v.GetTensorShape().GetDim() {
		tp.Shape = append(tp.Shape, d.GetSize())
	}
	return tp, ""
}

// writeAvoidingConflicts writes batch; if the store refuses it because a
// series already exists with another data class (which fails the whole
// call before anything is written), it finds those series, reports them
// as bad and writes the rest.
func writeAvoidingConflicts[B any](ctx context.Context, st store.Store, eid string, class store.DataClass, batch []B,
	series func(*B) *store.TimeSeries, write func([]B) error, bad *violations) error {
	err := write(batch)
	if !errors.Is(err, store.ErrFailedPrecondition) {
		return err
	}
	existing, lerr := st.ListSeries(ctx, eid, store.DataClassUnknown, store.Filter{})
	if lerr != nil {
		return errors.Join(err, lerr)
	}
	classOf := make(map[store.SeriesRef]store.DataClass, len(existing))
	for _, s := range existing {
		classOf[store.SeriesRef{Run: s.Run, Tag: s.Tag}] = s.DataClass
	}
	var keep []B
	for i := range batch {
		ts := series(&batch[i])
		if c, ok := classOf[store.SeriesRef{Run: ts.Run, Tag: ts.Tag}]; ok && c != class {
			bad.add("", ts.Run, ts.Tag, nil, fmt.Sprintf("the series holds %v data; it cannot take %v points", c, class))
			continue
		}
		keep = append(keep, batch[i])
	}
	if len(keep) == len(batch) || len(keep) == 0 {
		if len(keep) == 0 {
			return nil
		}
		return err
	}
	return write(keep)
}
