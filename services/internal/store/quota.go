package store

import (
	"context"
	"fmt"
)

// QuotaError is a write refused inside its transaction because it would
// pass a per-user quota: the user had Used, the write adds Adding, the
// quota is Limit. It wraps ErrQuotaExceeded.
type QuotaError struct {
	Quota  string // what is counted, e.g. "points per user"
	Limit  int64
	Used   int64
	Adding int64
}

func (e *QuotaError) Error() string {
	return fmt.Sprintf("quota exceeded: %s is %d: the user has %d and this request adds %d (%d over)",
		e.Quota, e.Limit, e.Used, e.Adding, e.Used+e.Adding-e.Limit)
}

func (e *QuotaError) Unwrap() error { return ErrQuotaExceeded }

// PointsQuotaName names the points quota in QuotaError.
const PointsQuotaName = "points per user"

type pointsQuotaKey struct{}

// WithPointsQuota returns ctx carrying the points quota of the caller's
// writes: WriteScalars and WriteTensors under it refuse, with a
// *QuotaError and nothing written, a commit that would take the
// experiment owner's stored points (UserUsage.Points, counted in the
// same transaction as the points) past limit. limit <= 0: unlimited. The
// quota travels with the request, as its deadline does, because it is
// the caller's policy, not the store's.
func WithPointsQuota(ctx context.Context, limit int64) context.Context {
	return context.WithValue(ctx, pointsQuotaKey{}, limit)
}

// PointsQuota returns the points quota WithPointsQuota put in ctx; 0
// (unlimited) if none.
func PointsQuota(ctx context.Context) int64 {
	limit, _ := ctx.Value(pointsQuotaKey{}).(int64)
	return max(limit, 0)
}

// CheckPointsQuota returns the *QuotaError of a commit adding added
// points to a user who had used, under the quota of ctx; nil if it fits.
// Rewrites of stored steps add nothing.
func CheckPointsQuota(ctx context.Context, used, added int64) error {
	if limit := PointsQuota(ctx); limit > 0 && added > 0 && used+added > limit {
		return &QuotaError{Quota: PointsQuotaName, Limit: limit, Used: used, Adding: added}
	}
	return nil
}
