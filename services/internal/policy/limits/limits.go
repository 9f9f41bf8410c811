// Package limits holds the limits that protect the write service (sizes
// per request, per blob and per point; per-user quotas; per-user request
// rates) and enforces the per-user ones. The same Limits value is
// advertised to uploaders in the handshake, so a well-behaved client never
// meets them; one that does gets RESOURCE_EXHAUSTED with a message naming
// the limit and its value.
package limits

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"google.golang.org/grpc/codes"

	"github.com/tbhub/tbhub/services/internal/policy/rpcerr"
	"github.com/tbhub/tbhub/services/internal/storage/store"
	"github.com/tbhub/tbhub/services/serverkit/config"
)

// Limits are the service's limits. Sizes are bytes; a zero quota is
// unlimited.
type Limits struct {
	// MaxRequestBytes is the largest gRPC message the server accepts (its
	// MaxRecvMsgSize); gRPC itself answers RESOURCE_EXHAUSTED above it.
	MaxRequestBytes int64
	// Advertised request budgets of the uploader, each at most
	// MaxRequestBytes.
	MaxScalarRequestBytes int64
	MaxTensorRequestBytes int64
	MaxBlobChunkBytes     int64
	// MaxBlobBytes is the largest blob WriteBlob accepts.
	MaxBlobBytes int64
	// MaxTensorPointBytes is the largest serialized TensorProto of one
	// tensor point.
	MaxTensorPointBytes int64
	// MaxPointsPerRequest bounds the points of one WriteScalar or
	// WriteTensor call.
	MaxPointsPerRequest int64
	// MaxBlobsPerSequence bounds final_sequence_length.
	MaxBlobsPerSequence int64
	// MaxMetadataBytes bounds a series' serialized SummaryMetadata (its
	// plugin_data.content included); what is stored counts toward
	// MaxBlobBytesPerUser.
	MaxMetadataBytes int64
	// Advertised minimum intervals between an uploader's requests.
	MinScalarRequestInterval time.Duration
	MinTensorRequestInterval time.Duration
	MinBlobRequestInterval   time.Duration

	// Per-user quotas over live experiments; 0 = unlimited.
	// MaxBlobBytesPerUser counts every stored byte that points do not:
	// blobs, finished or not, series metadata, token records, runs and
	// grants (store.Usage.StoredBytes). MaxPendingGrantsPerUser bounds the
	// pending grants (by email) on a user's experiments.
	MaxExperimentsPerUser   int64
	MaxPointsPerUser        int64
	MaxBlobBytesPerUser     int64
	MaxPendingGrantsPerUser int64
	// MaxTokensPerUser caps a user's live API tokens, web sessions
	// included (neither revoked nor expired; store.Usage.Tokens); 0 =
	// unlimited. Token records count toward MaxBlobBytesPerUser too.
	MaxTokensPerUser int64
	// UsageRefresh is how long an instance trusts its cached copy of a
	// user's usage before reading it again. The cache is a pre-check:
	// the points, experiments, tokens and pending grants quotas, and the
	// byte quota's blob bytes, are checked exactly by the store, in the
	// write's transaction (store.WithQuotas), so a longer refresh costs
	// nothing in exactness there, only in the overshoot of the byte
	// quota's other bytes (metadata, tokens, runs, grants).
	UsageRefresh time.Duration

	// MaxRunsPerExperiment bounds the runs of one experiment, however
	// they are created (PutRuns, points, blob sequences); 0 = unlimited.
	// It also bounds every answer that lists an experiment's runs
	// (TensorBoard's data/runs and ListRuns have no paging).
	MaxRunsPerExperiment int64

	// Per-user write rate: RequestsPerSecond sustained, Burst at once.
	// RequestsPerSecond 0 disables rate limiting.
	RequestsPerSecond float64
	Burst             int

	// WriteBlob streams open at once, per user and per client: the user
	// from one client address (the connection's peer, or the address a
	// trusted proxy forwarded; never the proxy's connection, which many
	// users share). Each holds an open object being written (a file
	// descriptor on the embedded store, an upload buffer on GCS) until it
	// ends.
	MaxBlobStreamsPerUser int
	MaxBlobStreamsPerConn int
	// BlobStreamIdleTimeout ends a WriteBlob stream whose next request has
	// not arrived this long; BlobStreamTimeout ends any stream this long
	// after it started. What arrived is kept (resumable) either way.
	BlobStreamIdleTimeout time.Duration
	BlobStreamTimeout     time.Duration

	// BadCredentials is each client address's budget of failed
	// credential checks (BadCredentials).
	BadCredentials CredentialLimits

	// Instances is how many processes of this service may run at once
	// (Cloud Run's maximum instance count; 0 or 1: one). The budgets a
	// process keeps in its own memory (the per-user write rate and burst,
	// the blob stream caps) are partitioned: each process enforces its
	// share, the budget divided by Instances and rounded up, so that all
	// of them together allow at most the budget (plus one unit per process
	// from the rounding), however calls spread over them. A user whose
	// calls all reach one process gets that process's share. The bad
	// credential throttle is shared out the same way
	// (CredentialLimits.Instances).
	Instances int
}

// InstancesSetting describes --instances for an assembly's flag set.
func InstancesSetting(n *int) config.Setting {
	return config.Setting{Name: "instances", Usage: "processes of this service that may run at once (Cloud Run's maximum instances): each enforces its share of the per-user write rate, the blob stream caps and the invalid-credentials throttle, so that together they allow at most the configured budget", Value: n}
}

// share is one of instances processes' share of the budget n: n divided
// by instances, rounded up (at least 1 of a positive budget).
func share(n, instances int) int {
	if instances <= 1 || n <= 0 {
		return n
	}
	return (n + instances - 1) / instances
}

// shareRate is one of instances processes' share of the rate r.
func shareRate(r float64, instances int) float64 {
	if instances <= 1 {
		return r
	}
	return r / float64(instances)
}

// ofInstances says, in a refusal, that the number is this process's share.
func ofInstances(instances int) string {
	if instances <= 1 {
		return ""
	}
	return fmt.Sprintf(" on this instance (a 1/%d share: the service runs up to %d)", instances, instances)
}

// PerInstance returns l with the budgets a process keeps in memory (the
// write rate and burst, the blob stream caps) cut to one process's share
// of Instances (see Instances).
func (l Limits) PerInstance() Limits {
	l.RequestsPerSecond = shareRate(l.RequestsPerSecond, l.Instances)
	l.Burst = share(l.Burst, l.Instances)
	l.MaxBlobStreamsPerUser = share(l.MaxBlobStreamsPerUser, l.Instances)
	l.MaxBlobStreamsPerConn = share(l.MaxBlobStreamsPerConn, l.Instances)
	return l
}

// Default returns the limits tbhub runs with unless configured otherwise.
func Default() Limits {
	return Limits{
		MaxRequestBytes:       8 << 20,
		MaxScalarRequestBytes: 1 << 20,
		MaxTensorRequestBytes: 1 << 20,
		MaxBlobChunkBytes:     4<<20 - 256<<10,
		MaxBlobBytes:          64 << 20,
		MaxTensorPointBytes:   1 << 20,
		MaxPointsPerRequest:   100_000,
		MaxBlobsPerSequence:   10_000,
		// TensorBoard's largest are the hparams plugin's experiment
		// summaries, a few KiB for hundreds of hyperparameters.
		MaxMetadataBytes: 64 << 10,
		// The per-user token bucket below protects the service; the intervals
		// only tell clients not to wait. 1 ms is the smallest that says so:
		// 0 would mean "use TensorBoard's defaults" (up to 5 s per request).
		MinScalarRequestInterval: time.Millisecond,
		MinTensorRequestInterval: time.Millisecond,
		MinBlobRequestInterval:   time.Millisecond,
		MaxExperimentsPerUser:    1_000,
		MaxPointsPerUser:         1_000_000_000,
		MaxBlobBytesPerUser:      100 << 30,
		// A user's laptops, CI jobs and browsers, with room to spare;
		// revoked and expired tokens free their place.
		MaxTokensPerUser: 100,
		UsageRefresh:     10 * time.Second,
		// Sharing with a class or a team by email before they sign in;
		// each pending grant is a row no sign-in has claimed yet.
		MaxPendingGrantsPerUser: 1_000,
		// A sweep of 5,000 trials, each with a train and an eval run,
		// fits twice. Every run is listed whole to any reader (data/runs):
		// 20,000 runs of typical 30-byte names answer about 700 KB, of
		// the longest names (1 KiB) about 21 MB.
		MaxRunsPerExperiment: 20_000,
		// An upload of a blob-heavy logdir sends two requests per blob
		// (GetOrCreateBlobSequence, WriteBlob) as fast as it can; several
		// uploads of one user may run at once.
		RequestsPerSecond: 500,
		Burst:             1000,
		// tbup writes one blob at a time per upload; a user may run a few
		// uploads, over one connection each.
		MaxBlobStreamsPerUser: 64,
		MaxBlobStreamsPerConn: 16,
		// A 4 MiB chunk at 1 Mbit/s takes 32 s; the whole 64 MiB blob at
		// that rate about nine minutes.
		BlobStreamIdleTimeout: time.Minute,
		BlobStreamTimeout:     15 * time.Minute,
		BadCredentials:        DefaultCredentialLimits(),
	}
}

// Validate reports limits that cannot work together.
func (l Limits) Validate() error {
	switch {
	case l.MaxRequestBytes <= 0:
		return fmt.Errorf("limits: MaxRequestBytes must be positive")
	case l.MaxScalarRequestBytes > l.MaxRequestBytes, l.MaxTensorRequestBytes > l.MaxRequestBytes:
		return fmt.Errorf("limits: request budgets must not exceed MaxRequestBytes (%d)", l.MaxRequestBytes)
	case l.MaxBlobChunkBytes <= 0 || l.MaxBlobChunkBytes+64<<10 > l.MaxRequestBytes:
		return fmt.Errorf("limits: MaxBlobChunkBytes must be positive and leave 64 KiB of MaxRequestBytes for the envelope")
	case l.MaxBlobBytes <= 0, l.MaxTensorPointBytes <= 0, l.MaxPointsPerRequest <= 0, l.MaxBlobsPerSequence <= 0, l.MaxMetadataBytes <= 0:
		return fmt.Errorf("limits: blob, tensor point, points-per-request, blobs-per-sequence and metadata limits must be positive")
	case l.MaxRunsPerExperiment < 0 || l.MaxPendingGrantsPerUser < 0:
		return fmt.Errorf("limits: runs per experiment and pending grants per user must not be negative (0: unlimited)")
	case l.RequestsPerSecond < 0 || (l.RequestsPerSecond > 0 && l.Burst < 1):
		return fmt.Errorf("limits: a rate limit needs a burst of at least 1")
	case l.MaxBlobStreamsPerUser <= 0 || l.MaxBlobStreamsPerConn <= 0:
		return fmt.Errorf("limits: blob streams per user and per connection must be positive")
	case l.Instances < 0:
		return fmt.Errorf("limits: instances must not be negative")
	case l.UsageRefresh <= 0:
		return fmt.Errorf("limits: the usage refresh must be positive")
	case l.BlobStreamIdleTimeout <= 0 || l.BlobStreamTimeout < l.BlobStreamIdleTimeout:
		return fmt.Errorf("limits: the blob stream idle timeout must be positive and the total timeout at least as long")
	}
	return l.BadCredentials.Validate()
}

// UsageSource is where the enforcer reads a user's usage.
type UsageSource interface {
	UserUsage(ctx context.Context, userID string) (store.Usage, error)
}

// Enforcer enforces the per-user rate limits and quotas. It is safe for
// concurrent use. A user's usage is cached for Limits.UsageRefresh; in
// between, admitted work is added to it, and a refresh corrects rewrites
// of existing points (counted as new) and deletions. Quota checks are as
// exact as one process can make them: with several server processes each
// may admit up to one refresh interval's work beyond a quota. For points,
// experiments, tokens, pending grants and blob bytes the enforcer is only
// a pre-check: the store refuses, exactly, what passes the quota
// (store.WithQuotas).
type Enforcer struct {
	l     Limits // as configured
	mine  Limits // l.PerInstance(): what this process enforces
	usage UsageSource
	now   func() time.Time

	mu      sync.Mutex
	users   map[string]*userState
	streams map[string]int // open WriteBlob streams by "user:" + ID and "conn:" + address
}

type userState struct {
	limiter *rate.Limiter
	mu      sync.Mutex // guards usage, loaded and reserved
	usage   store.Usage
	loaded  time.Time
	// reserved is blob bytes admitted to streams still running: not in
	// the store yet, so not in usage, and kept across refreshes.
	reserved int64
}

// NewEnforcer returns an enforcer of l reading usage from src.
func NewEnforcer(l Limits, src UsageSource, now func() time.Time) (*Enforcer, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	if now == nil {
		now = time.Now
	}
	return &Enforcer{l: l, mine: l.PerInstance(), usage: src, now: now, users: map[string]*userState{}, streams: map[string]int{}}, nil
}

// Limits returns the enforced limits.
func (e *Enforcer) Limits() Limits { return e.l }

func (e *Enforcer) user(id string) *userState {
	e.mu.Lock()
	defer e.mu.Unlock()
	u, ok := e.users[id]
	if !ok {
		limit := rate.Inf
		if e.mine.RequestsPerSecond > 0 {
			limit = rate.Limit(e.mine.RequestsPerSecond)
		}
		u = &userState{limiter: rate.NewLimiter(limit, e.mine.Burst)}
		e.users[id] = u
	}
	return u
}

// Allow takes one request from the user's rate budget.
func (e *Enforcer) Allow(userID string) error {
	if e.user(userID).limiter.AllowN(e.now(), 1) {
		return nil
	}
	return rpcerr.New(codes.ResourceExhausted,
		"rate limit exceeded: %g requests/s per user (burst %d)%s; retry later", e.mine.RequestsPerSecond, e.mine.Burst, ofInstances(e.l.Instances))
}

// Usage returns the user's usage read from the store now.
func (e *Enforcer) Usage(ctx context.Context, userID string) (store.Usage, error) {
	u := e.user(userID)
	u.mu.Lock()
	defer u.mu.Unlock()
	if err := e.refresh(ctx, u, userID, true); err != nil {
		return store.Usage{}, err
	}
	return u.usage, nil
}

func (e *Enforcer) refresh(ctx context.Context, u *userState, userID string, force bool) error {
	now := e.now()
	if !force && !u.loaded.IsZero() && now.Sub(u.loaded) < e.l.UsageRefresh {
		return nil
	}
	usage, err := e.usage.UserUsage(ctx, userID)
	if err != nil {
		return fmt.Errorf("limits: usage of %s: %w", userID, err)
	}
	u.usage, u.loaded = usage, now
	return nil
}

// quota names one per-user quota for messages, says what it counts and
// selects its counter. u.mu is held when used and add are called.
type quota struct {
	name   string
	counts string // appended to the name in messages
	limit  func(Limits) int64
	used   func(u *userState) int64
	add    func(u *userState, n int64)
}

var (
	experimentsQuota = quota{name: "experiments per user", limit: func(l Limits) int64 { return l.MaxExperimentsPerUser },
		used: func(u *userState) int64 { return u.usage.Experiments }, add: func(u *userState, n int64) { u.usage.Experiments += n }}
	pointsQuota = quota{name: "points per user", limit: func(l Limits) int64 { return l.MaxPointsPerUser },
		used: func(u *userState) int64 { return u.usage.Points }, add: func(u *userState, n int64) { u.usage.Points += n }}
	tokensQuota = quota{name: "live API tokens per user", counts: ", counting web sessions and tokens neither revoked nor expired",
		limit: func(l Limits) int64 { return l.MaxTokensPerUser },
		used:  func(u *userState) int64 { return u.usage.Tokens }, add: func(u *userState, n int64) { u.usage.Tokens += n }}
	// bytesQuota counts blob bytes stored and reserved by running streams,
	// series metadata, token records, runs and grants; admitted metadata,
	// token, run and grant bytes are added here (to MetadataBytes until the
	// next refresh), blob bytes by ReserveBlobBytes.
	bytesQuota = quota{name: "blob bytes per user", counts: ", counting blobs (finished or not), series metadata, API tokens, runs and grants",
		limit: func(l Limits) int64 { return l.MaxBlobBytesPerUser },
		used:  func(u *userState) int64 { return u.usage.StoredBytes() + u.reserved },
		add:   func(u *userState, n int64) { u.usage.MetadataBytes += n }}
	pendingGrantsQuota = quota{name: "pending grants per user", counts: " (grants by email no one has signed in with yet)",
		limit: func(l Limits) int64 { return l.MaxPendingGrantsPerUser },
		used:  func(u *userState) int64 { return u.usage.PendingGrants }, add: func(u *userState, n int64) { u.usage.PendingGrants += n }}
)

// ReserveExperiment admits one more experiment for the user.
func (e *Enforcer) ReserveExperiment(ctx context.Context, userID string) error {
	return e.reserve(ctx, userID, charge{experimentsQuota, 1})
}

// ReservePoints admits n more points for the user.
func (e *Enforcer) ReservePoints(ctx context.Context, userID string, n int64) error {
	return e.reserve(ctx, userID, charge{pointsQuota, n})
}

// ReserveBlobBytes admits a blob stream that may store n more bytes for
// the user: the n bytes count against the quota until the stream ends,
// when settle(stored) replaces them by the bytes it stored. settle must
// be called exactly once, however the stream ended.
func (e *Enforcer) ReserveBlobBytes(ctx context.Context, userID string, n int64) (settle func(stored int64), err error) {
	if n < 0 {
		n = 0
	}
	u := e.user(userID)
	u.mu.Lock()
	defer u.mu.Unlock()
	if err := e.admit(ctx, u, userID, bytesQuota, n); err != nil {
		return nil, err
	}
	u.reserved += n
	var once sync.Once
	return func(stored int64) {
		once.Do(func() {
			u.mu.Lock()
			defer u.mu.Unlock()
			u.reserved -= n
			u.usage.BlobBytes += stored
		})
	}, nil
}

// ReserveStoredBytes admits a write that stores n more bytes under the
// byte quota besides blobs: series metadata, runs, grants (their
// store.RowBytes). A series keeps the metadata of its first write only,
// so n over-counts series that exist already (the stock uploader repeats
// a tag's metadata in every request); the next refresh of the usage from
// the store corrects it.
func (e *Enforcer) ReserveStoredBytes(ctx context.Context, userID string, n int64) error {
	return e.reserve(ctx, userID, charge{bytesQuota, n})
}

// ReserveToken admits one more live API token for the user, whose record
// takes n bytes (store.APIToken.StoredBytes): under the token cap and the
// byte quota, both or neither.
func (e *Enforcer) ReserveToken(ctx context.Context, userID string, n int64) error {
	return e.reserve(ctx, userID, charge{tokensQuota, 1}, charge{bytesQuota, n})
}

// StoredBesideBlobs returns the user's stored bytes other than blobs
// (series metadata, tokens, runs, grants, and what this instance admitted
// of them since it read the usage), reading the usage again if it is
// stale: what the store adds to the blob bytes it counts when it checks
// the byte quota (store.Quotas.OtherBytes).
func (e *Enforcer) StoredBesideBlobs(ctx context.Context, userID string) (int64, error) {
	u := e.user(userID)
	u.mu.Lock()
	defer u.mu.Unlock()
	if err := e.refresh(ctx, u, userID, false); err != nil {
		return 0, err
	}
	return u.usage.StoredBytes() - u.usage.BlobBytes, nil
}

// UsageChanged makes the next quota check of the user read the usage from
// the store again: call it after a change that frees quota (revoked
// tokens), so that a user at a cap may use what was freed at once.
func (e *Enforcer) UsageChanged(userID string) {
	u := e.user(userID)
	u.mu.Lock()
	defer u.mu.Unlock()
	u.loaded = time.Time{}
}

// ReservePendingGrant admits one more pending grant of n bytes (its
// store.RowBytes) for the user: under the pending grants quota and the
// byte quota, both or neither.
func (e *Enforcer) ReservePendingGrant(ctx context.Context, userID string, n int64) error {
	return e.reserve(ctx, userID, charge{bytesQuota, n}, charge{pendingGrantsQuota, 1})
}

// AcquireBlobStream admits one more WriteBlob stream of the user from the
// client address client ("" if unknown: then only the per-user cap
// applies). Both caps are keyed by the user, so users that share a
// connection (all of them, behind a proxy) or an address never use up each
// other's. release gives the slot back; call it once when the stream ends.
func (e *Enforcer) AcquireBlobStream(userID, client string) (release func(), err error) {
	keys := []string{"user:" + userID}
	if client != "" {
		keys = append(keys, "client:"+userID+"\x00"+client)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.streams[keys[0]] >= e.mine.MaxBlobStreamsPerUser {
		return nil, rpcerr.New(codes.ResourceExhausted,
			"too many blob uploads at once: %d WriteBlob streams per user%s; finish one first", e.mine.MaxBlobStreamsPerUser, ofInstances(e.l.Instances))
	}
	if len(keys) > 1 && e.streams[keys[1]] >= e.mine.MaxBlobStreamsPerConn {
		return nil, rpcerr.New(codes.ResourceExhausted,
			"too many blob uploads at once: %d WriteBlob streams per user from one client address%s; finish one first", e.mine.MaxBlobStreamsPerConn, ofInstances(e.l.Instances))
	}
	for _, k := range keys {
		e.streams[k]++
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			e.mu.Lock()
			defer e.mu.Unlock()
			for _, k := range keys {
				if e.streams[k]--; e.streams[k] <= 0 {
					delete(e.streams, k)
				}
			}
		})
	}, nil
}

// ReservePointWrite admits a point write (WriteScalar, WriteTensor):
// points under the points quota and metadataBytes of series metadata
// under the byte quota (as ReserveStoredBytes), both or neither, under
// one lock and at most one read of the usage. The byte quota is checked
// first.
func (e *Enforcer) ReservePointWrite(ctx context.Context, userID string, points, metadataBytes int64) error {
	return e.reserve(ctx, userID, charge{bytesQuota, metadataBytes}, charge{pointsQuota, points})
}

// charge is n more of quota q; n <= 0 asks nothing.
type charge struct {
	q quota
	n int64
}

// reserve admits all the charges or none, and adds them.
func (e *Enforcer) reserve(ctx context.Context, userID string, charges ...charge) error {
	if !slices.ContainsFunc(charges, func(c charge) bool { return c.n > 0 }) {
		return nil
	}
	u := e.user(userID)
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, c := range charges {
		if c.n > 0 {
			if err := e.admit(ctx, u, userID, c.q, c.n); err != nil {
				return err
			}
		}
	}
	for _, c := range charges {
		if c.n > 0 {
			c.q.add(u, c.n)
		}
	}
	return nil
}

// admit reports whether n more fit quota q of the user, whose u.mu is
// held, reading the usage again if it is stale.
func (e *Enforcer) admit(ctx context.Context, u *userState, userID string, q quota, n int64) error {
	limit := q.limit(e.l)
	if limit == 0 {
		return nil
	}
	if err := e.refresh(ctx, u, userID, false); err != nil {
		return err
	}
	if used := q.used(u); used+n > limit {
		return rpcerr.New(codes.ResourceExhausted, "quota exceeded: %s is %d%s (used %d, this request adds %d)",
			q.name, limit, q.counts, used, n)
	}
	return nil
}
