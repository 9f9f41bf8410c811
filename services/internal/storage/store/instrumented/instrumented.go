// Package instrumented times and traces every call a process makes to its
// store: a span per call (named "store.METHOD", a child of the caller's, so
// a trace shows the Spanner or SQLite time of each RPC) and the
// tbhub_store_seconds histogram by method. The read and write services
// and tbhub serve wrap their backend's store with it.
package instrumented

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/tbhub/tbhub/services/internal/storage/store"
	"github.com/tbhub/tbhub/services/serverkit/telemetry"
)

// Store is a store.Store that observes the one it wraps. It also
// implements store.AccessReader (through GetExperiment if the wrapped
// store does not).
type Store struct {
	st      store.Store
	tracer  trace.Tracer
	metrics *telemetry.Metrics
}

// Wrap returns st observed through tel and m.
func Wrap(st store.Store, tel *telemetry.Telemetry, m *telemetry.Metrics) *Store {
	return &Store{st: st, tracer: tel.Tracer("github.com/tbhub/tbhub/services/internal/storage/store"), metrics: m}
}

var (
	_ store.Store        = (*Store)(nil)
	_ store.AccessReader = (*Store)(nil)
)

// call runs one store method under a span and a timer. For reads with a
// visitor the time includes the visitor's.
func (s *Store) call(ctx context.Context, op string, f func(context.Context) error) error {
	ctx, span := s.tracer.Start(ctx, "store."+op, trace.WithSpanKind(trace.SpanKindClient))
	start := time.Now()
	err := f(ctx)
	notFound := errors.Is(err, store.ErrNotFound)
	s.metrics.ObserveStore(op, time.Since(start), err, notFound)
	if err != nil && !notFound {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
	return err
}

// value is call for methods that return a value.
func value[T any](s *Store, ctx context.Context, op string, f func(context.Context) (T, error)) (T, error) {
	var v T
	err := s.call(ctx, op, func(ctx context.Context) error {
		var err error
		v, err = f(ctx)
		return err
	})
	return v, err
}

// GetExperimentAccess implements store.AccessReader.
func (s *Store) GetExperimentAccess(ctx context.Context, eid string) (store.Experiment, error) {
	return value(s, ctx, "GetExperimentAccess", func(ctx context.Context) (store.Experiment, error) {
		if ar, ok := s.st.(store.AccessReader); ok {
			return ar.GetExperimentAccess(ctx, eid)
		}
		return s.st.GetExperiment(ctx, eid)
	})
}

func (s *Store) GetUser(ctx context.Context, id string) (store.User, error) {
	return value(s, ctx, "GetUser", func(ctx context.Context) (store.User, error) { return s.st.GetUser(ctx, id) })
}

func (s *Store) GetUserByName(ctx context.Context, name string) (store.User, error) {
	return value(s, ctx, "GetUserByName", func(ctx context.Context) (store.User, error) { return s.st.GetUserByName(ctx, name) })
}

func (s *Store) GetExperiment(ctx context.Context, eid string) (store.Experiment, error) {
	return value(s, ctx, "GetExperiment", func(ctx context.Context) (store.Experiment, error) { return s.st.GetExperiment(ctx, eid) })
}

func (s *Store) ListExperiments(ctx context.Context, f store.ExperimentFilter, fn func(store.Experiment) error) error {
	return s.call(ctx, "ListExperiments", func(ctx context.Context) error { return s.st.ListExperiments(ctx, f, fn) })
}

func (s *Store) ListPublicExperiments(ctx context.Context, q store.PublicQuery) ([]store.Experiment, error) {
	return value(s, ctx, "ListPublicExperiments", func(ctx context.Context) ([]store.Experiment, error) { return s.st.ListPublicExperiments(ctx, q) })
}

func (s *Store) ListRuns(ctx context.Context, eid string) ([]store.Run, error) {
	return value(s, ctx, "ListRuns", func(ctx context.Context) ([]store.Run, error) { return s.st.ListRuns(ctx, eid) })
}

func (s *Store) ListRunsAfter(ctx context.Context, eid, after string, limit int) ([]store.Run, error) {
	return value(s, ctx, "ListRunsAfter", func(ctx context.Context) ([]store.Run, error) { return s.st.ListRunsAfter(ctx, eid, after, limit) })
}

func (s *Store) CountRuns(ctx context.Context, eid string, names []string) (total int64, missing []string, err error) {
	err = s.call(ctx, "CountRuns", func(ctx context.Context) error {
		total, missing, err = s.st.CountRuns(ctx, eid, names)
		return err
	})
	return total, missing, err
}

func (s *Store) ListPlugins(ctx context.Context, eid string) ([]string, error) {
	return value(s, ctx, "ListPlugins", func(ctx context.Context) ([]string, error) { return s.st.ListPlugins(ctx, eid) })
}

func (s *Store) ListSeries(ctx context.Context, eid string, c store.DataClass, f store.Filter) ([]store.SeriesSummary, error) {
	return value(s, ctx, "ListSeries", func(ctx context.Context) ([]store.SeriesSummary, error) { return s.st.ListSeries(ctx, eid, c, f) })
}

func (s *Store) ReadScalars(ctx context.Context, eid string, q store.Query, fn store.ScalarVisitor) error {
	return s.call(ctx, "ReadScalars", func(ctx context.Context) error { return s.st.ReadScalars(ctx, eid, q, fn) })
}

func (s *Store) ReadTensors(ctx context.Context, eid string, q store.Query, fn store.TensorVisitor) error {
	return s.call(ctx, "ReadTensors", func(ctx context.Context) error { return s.st.ReadTensors(ctx, eid, q, fn) })
}

func (s *Store) ReadBlobSequences(ctx context.Context, eid string, q store.Query, fn store.BlobSequenceVisitor) error {
	return s.call(ctx, "ReadBlobSequences", func(ctx context.Context) error { return s.st.ReadBlobSequences(ctx, eid, q, fn) })
}

func (s *Store) GetBlob(ctx context.Context, eid string, ref store.BlobRef) (store.Blob, error) {
	return value(s, ctx, "GetBlob", func(ctx context.Context) (store.Blob, error) { return s.st.GetBlob(ctx, eid, ref) })
}

func (s *Store) CreateUser(ctx context.Context, u store.User) error {
	return s.call(ctx, "CreateUser", func(ctx context.Context) error { return s.st.CreateUser(ctx, u) })
}

func (s *Store) CreateExperiment(ctx context.Context, e store.Experiment) error {
	return s.call(ctx, "CreateExperiment", func(ctx context.Context) error { return s.st.CreateExperiment(ctx, e) })
}

func (s *Store) CreateExperimentOnce(ctx context.Context, e store.Experiment, req store.CreateRequest) (string, error) {
	return value(s, ctx, "CreateExperimentOnce", func(ctx context.Context) (string, error) { return s.st.CreateExperimentOnce(ctx, e, req) })
}

func (s *Store) CreatedBy(ctx context.Context, userID, requestID string, now time.Time) (string, error) {
	return value(s, ctx, "CreatedBy", func(ctx context.Context) (string, error) { return s.st.CreatedBy(ctx, userID, requestID, now) })
}

func (s *Store) UpdateExperiment(ctx context.Context, eid string, u store.ExperimentUpdate) (store.Experiment, error) {
	return value(s, ctx, "UpdateExperiment", func(ctx context.Context) (store.Experiment, error) { return s.st.UpdateExperiment(ctx, eid, u) })
}

func (s *Store) DeleteExperiment(ctx context.Context, eid string) error {
	return s.call(ctx, "DeleteExperiment", func(ctx context.Context) error { return s.st.DeleteExperiment(ctx, eid) })
}

func (s *Store) GrantRead(ctx context.Context, eid, userID string) error {
	return s.call(ctx, "GrantRead", func(ctx context.Context) error { return s.st.GrantRead(ctx, eid, userID) })
}

func (s *Store) RevokeRead(ctx context.Context, eid, userID string) error {
	return s.call(ctx, "RevokeRead", func(ctx context.Context) error { return s.st.RevokeRead(ctx, eid, userID) })
}

func (s *Store) WriteScalars(ctx context.Context, eid string, batch []store.ScalarSeries) error {
	return s.call(ctx, "WriteScalars", func(ctx context.Context) error { return s.st.WriteScalars(ctx, eid, batch) })
}

func (s *Store) WriteTensors(ctx context.Context, eid string, batch []store.TensorSeries) error {
	return s.call(ctx, "WriteTensors", func(ctx context.Context) error { return s.st.WriteTensors(ctx, eid, batch) })
}

func (s *Store) PutRuns(ctx context.Context, eid string, runs []store.Run) error {
	return s.call(ctx, "PutRuns", func(ctx context.Context) error { return s.st.PutRuns(ctx, eid, runs) })
}

func (s *Store) GetOrCreateBlobSequence(ctx context.Context, eid string, series store.TimeSeries, step int64, wallTime float64, length int64) (store.BlobSequencePoint, []store.Blob, error) {
	var point store.BlobSequencePoint
	var replaced []store.Blob
	err := s.call(ctx, "GetOrCreateBlobSequence", func(ctx context.Context) error {
		var err error
		point, replaced, err = s.st.GetOrCreateBlobSequence(ctx, eid, series, step, wallTime, length)
		return err
	})
	return point, replaced, err
}

func (s *Store) PutBlob(ctx context.Context, eid string, ref store.BlobRef, b store.Blob) error {
	return s.call(ctx, "PutBlob", func(ctx context.Context) error { return s.st.PutBlob(ctx, eid, ref, b) })
}

func (s *Store) PutBlobIf(ctx context.Context, eid string, ref store.BlobRef, b store.Blob, want store.BlobMatch) error {
	return s.call(ctx, "PutBlobIf", func(ctx context.Context) error { return s.st.PutBlobIf(ctx, eid, ref, b, want) })
}

func (s *Store) ListDeletedExperiments(ctx context.Context, limit int) ([]string, error) {
	return value(s, ctx, "ListDeletedExperiments", func(ctx context.Context) ([]string, error) { return s.st.ListDeletedExperiments(ctx, limit) })
}

func (s *Store) ListObjectKeys(ctx context.Context, eid string, fn func(objectKey string) error) error {
	return s.call(ctx, "ListObjectKeys", func(ctx context.Context) error { return s.st.ListObjectKeys(ctx, eid, fn) })
}

func (s *Store) PurgeExperiment(ctx context.Context, eid string) error {
	return s.call(ctx, "PurgeExperiment", func(ctx context.Context) error { return s.st.PurgeExperiment(ctx, eid) })
}

func (s *Store) ListAbandonedBlobs(ctx context.Context, before time.Time, limit int) ([]store.AbandonedBlob, error) {
	return value(s, ctx, "ListAbandonedBlobs", func(ctx context.Context) ([]store.AbandonedBlob, error) {
		return s.st.ListAbandonedBlobs(ctx, before, limit)
	})
}

func (s *Store) DeleteAbandonedBlob(ctx context.Context, eid string, ref store.BlobRef, before time.Time) (bool, error) {
	return value(s, ctx, "DeleteAbandonedBlob", func(ctx context.Context) (bool, error) {
		return s.st.DeleteAbandonedBlob(ctx, eid, ref, before)
	})
}

func (s *Store) DeleteExpiredCreateRequests(ctx context.Context, now time.Time, limit int) (int, error) {
	return value(s, ctx, "DeleteExpiredCreateRequests", func(ctx context.Context) (int, error) {
		return s.st.DeleteExpiredCreateRequests(ctx, now, limit)
	})
}

func (s *Store) TakeLease(ctx context.Context, name, holder string, now time.Time, ttl time.Duration) (bool, error) {
	return value(s, ctx, "TakeLease", func(ctx context.Context) (bool, error) { return s.st.TakeLease(ctx, name, holder, now, ttl) })
}

func (s *Store) ReleaseLease(ctx context.Context, name, holder string) error {
	return s.call(ctx, "ReleaseLease", func(ctx context.Context) error { return s.st.ReleaseLease(ctx, name, holder) })
}

func (s *Store) GetOrCreateOIDCUser(ctx context.Context, issuer, subject, email, newUserID string) (store.User, error) {
	return value(s, ctx, "GetOrCreateOIDCUser", func(ctx context.Context) (store.User, error) {
		return s.st.GetOrCreateOIDCUser(ctx, issuer, subject, email, newUserID)
	})
}

func (s *Store) GetOIDCUser(ctx context.Context, issuer, subject string) (store.User, error) {
	return value(s, ctx, "GetOIDCUser", func(ctx context.Context) (store.User, error) { return s.st.GetOIDCUser(ctx, issuer, subject) })
}

func (s *Store) GetOIDCIdentity(ctx context.Context, userID string) (store.OIDCIdentity, error) {
	return value(s, ctx, "GetOIDCIdentity", func(ctx context.Context) (store.OIDCIdentity, error) { return s.st.GetOIDCIdentity(ctx, userID) })
}

func (s *Store) SetDisplayName(ctx context.Context, userID, name string) (store.User, error) {
	return value(s, ctx, "SetDisplayName", func(ctx context.Context) (store.User, error) { return s.st.SetDisplayName(ctx, userID, name) })
}

func (s *Store) CreateAPIToken(ctx context.Context, t store.APIToken) (store.APIToken, error) {
	return value(s, ctx, "CreateAPIToken", func(ctx context.Context) (store.APIToken, error) { return s.st.CreateAPIToken(ctx, t) })
}

func (s *Store) GetAPITokenByHash(ctx context.Context, h store.TokenHash) (store.APIToken, error) {
	return value(s, ctx, "GetAPITokenByHash", func(ctx context.Context) (store.APIToken, error) { return s.st.GetAPITokenByHash(ctx, h) })
}

func (s *Store) ListAPITokens(ctx context.Context, userID string) ([]store.APIToken, error) {
	return value(s, ctx, "ListAPITokens", func(ctx context.Context) ([]store.APIToken, error) { return s.st.ListAPITokens(ctx, userID) })
}

func (s *Store) RevokeAPIToken(ctx context.Context, userID, tokenID string, at time.Time) error {
	return s.call(ctx, "RevokeAPIToken", func(ctx context.Context) error { return s.st.RevokeAPIToken(ctx, userID, tokenID, at) })
}

func (s *Store) TouchAPIToken(ctx context.Context, tokenID string, at time.Time, every time.Duration) error {
	return s.call(ctx, "TouchAPIToken", func(ctx context.Context) error { return s.st.TouchAPIToken(ctx, tokenID, at, every) })
}

func (s *Store) AddPendingGrant(ctx context.Context, eid, email string) error {
	return s.call(ctx, "AddPendingGrant", func(ctx context.Context) error { return s.st.AddPendingGrant(ctx, eid, email) })
}

func (s *Store) RemovePendingGrant(ctx context.Context, eid, email string) error {
	return s.call(ctx, "RemovePendingGrant", func(ctx context.Context) error { return s.st.RemovePendingGrant(ctx, eid, email) })
}

func (s *Store) ListPendingGrants(ctx context.Context, eid string) ([]string, error) {
	return value(s, ctx, "ListPendingGrants", func(ctx context.Context) ([]string, error) { return s.st.ListPendingGrants(ctx, eid) })
}

func (s *Store) UserUsage(ctx context.Context, userID string) (store.Usage, error) {
	return value(s, ctx, "UserUsage", func(ctx context.Context) (store.Usage, error) { return s.st.UserUsage(ctx, userID) })
}

func (s *Store) ListGrantedExperiments(ctx context.Context, userID string) ([]string, error) {
	return value(s, ctx, "ListGrantedExperiments", func(ctx context.Context) ([]string, error) { return s.st.ListGrantedExperiments(ctx, userID) })
}
