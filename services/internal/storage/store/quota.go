package store

import (
	"context"
	"fmt"
)

// QuotaError is a write refused inside its transaction because it would
// pass a per-user quota: the user had Used, the write adds Adding, the
// quota is Limit. It wraps ErrQuotaExceeded.
type QuotaError struct {
	Quota  string // what is counted: PointsQuotaName, ExperimentsQuotaName, BytesQuotaName
	Limit  int64
	Used   int64
	Adding int64
}

func (e *QuotaError) Error() string {
	return fmt.Sprintf("quota exceeded: %s is %d: the user has %d and this request adds %d (%d over)",
		e.Quota, e.Limit, e.Used, e.Adding, e.Used+e.Adding-e.Limit)
}

func (e *QuotaError) Unwrap() error { return ErrQuotaExceeded }

// The quotas a store checks, by their names in QuotaError.
const (
	PointsQuotaName        = "points per user"
	ExperimentsQuotaName   = "experiments per user"
	BytesQuotaName         = "blob bytes per user" // as the enforcer names it: every stored byte but points
	TokensQuotaName        = "live API tokens per user"
	PendingGrantsQuotaName = "pending grants per user"
)

// Quotas are the per-user quotas a store checks inside the transactions
// that change what they count, against the usage row those transactions
// keep (Usage.Points, Usage.Experiments): exact whatever the number of
// writers. 0 (or less): unlimited.
type Quotas struct {
	Points      int64 // WriteScalars, WriteTensors
	Experiments int64 // CreateExperiment, CreateExperimentOnce
	// Bytes is the byte quota (Usage.StoredBytes), checked by PutBlob and
	// PutBlobIf when a row grows. The store counts blob bytes (Usage.
	// BlobBytes: current and unfinished rows) in the usage row, exactly;
	// OtherBytes is the caller's count of the user's other stored bytes
	// (series metadata, tokens, runs, grants), added to it as they were
	// when the caller last read them.
	Bytes      int64
	OtherBytes int64
	// Tokens caps the user's live API tokens (neither revoked nor
	// expired; CreateAPIToken); PendingGrants the pending grants on the
	// user's live experiments (a new one by AddPendingGrant). Each is
	// counted, from the rows, in the transaction that adds one.
	Tokens        int64
	PendingGrants int64
}

type quotasKey struct{}

// WithQuotas returns ctx carrying the quotas of the caller's writes: a
// write under it that would take the owner past one is refused, with a
// *QuotaError and nothing of it written (on a backend that splits a batch
// into commits, nothing of that commit). The quotas travel with the
// request, as its deadline does, because they are the caller's policy,
// not the store's.
func WithQuotas(ctx context.Context, q Quotas) context.Context {
	return context.WithValue(ctx, quotasKey{}, q)
}

// QuotasOf returns the quotas WithQuotas put in ctx; none (unlimited) if
// it put none.
func QuotasOf(ctx context.Context) Quotas {
	q, _ := ctx.Value(quotasKey{}).(Quotas)
	return q
}

// CheckQuota returns the *QuotaError of a write adding added to a user who
// had used, under quota name's limit; nil if it fits or limit <= 0.
// Rewrites of what is stored add nothing.
func CheckQuota(name string, limit, used, added int64) error {
	if limit > 0 && added > 0 && used+added > limit {
		return &QuotaError{Quota: name, Limit: limit, Used: used, Adding: added}
	}
	return nil
}
