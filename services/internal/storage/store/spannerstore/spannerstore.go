// Package spannerstore is the Cloud Spanner backend of package store, on the
// schema in github.com/tbhub/tbhub/schemas/spanner (see its DDL for the key
// layout, the interleaving and why).
//
// # Writes
//
// Scalars are chunks of package scalarchunk, ScalarChunks rows in the
// embedded store's layout (scalarwrite.go): a write merges its points into
// the chunks their steps fall into, the newer point winning, so a retried
// batch writes the same chunks. Series written before that layout keep a
// ScalarPoints row per point until a write or MigrateScalarChunks converts
// them. Tensor and blob points are upserted (InsertOrUpdate) keyed by
// (experiment, run, tag, step), so a retried batch rewrites the same rows. Each write transaction first
// reads the experiment's State, which takes a shared lock on the row: a
// concurrent DeleteExperiment either commits before (the write then fails
// with store.ErrNotFound) or waits for the write, so nothing is written into
// a deleted experiment. The transaction also reads the series rows and the
// rows it is about to overwrite, to keep the per-series counters exact under
// rewrites; appends past a series' MaxStep skip that read.
//
// A batch is cut into commits that stay well inside Spanner's limits (80,000
// mutations, where an inserted row counts once per column and once more per
// column of each index entry, and 100 MB per commit): a big batch becomes
// several transactions, never an error. A batch that fits one commit is
// atomic.
//
// # Reads
//
// Every read method runs in one read-only transaction (a consistent
// snapshot) that checks the experiment's State with its first read, which
// also begins the transaction; a method that needs only one read
// (GetExperiment, ListSeries) runs it single-use. The point reads
// (ReadScalars, scalarread.go: one query for the series, or for a filter
// naming its runs and tags a read of the experiment's State and one of
// the series rows by key, then one read of every series' chunks, and one
// more for series whose sample levels held too few points of a window;
// its siblings, points.go) make a number of
// Spanner calls
// that does not grow with the number of series: one query for the State
// and the selected series (filtered in SQL, so other series' metadata is
// never read), then at once one read of the windows read whole, one of the
// sampled series' latest points and one of their SampleKey index ranges,
// each a key set of one range per series. Downsampling follows package
// downsample: the latest point of the window (a point read of the series'
// MaxStep when the window is open-ended), then the series' SampleKey index
// read from its start in a SampleKey range sized for k + 4√k + 16 entries,
// keeping in-window points until k-1 are found (a further, doubled range
// for the rare series still short). Without a step window that reads
// about k + 4√k index entries per series, whatever the series length; with
// a narrow step window the window itself is read instead; reading every
// point streams the primary-key ranges in step order.
//
// # Deletion
//
// DeleteExperiment flips State to DELETED in one transaction. PurgeExperiment
// removes the rows with partitioned DML (a big experiment has far more rows
// and index entries than one commit may delete) and the experiment row last.
package spannerstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"cloud.google.com/go/spanner"
	"google.golang.org/grpc/codes"

	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// Experiment states, Experiments.State.
const (
	stateLive    = "LIVE"
	stateDeleted = "DELETED"
)

// Options tunes a Store; the zero value is right for production Spanner.
type Options struct {
	// MaxBucketedPoints bounds the points a bucketed read
	// (store.Query.Buckets) reads of one series' window; past it the
	// series is answered from a sampled read (readScalarBuckets). Zero
	// means DefaultMaxBucketedPoints.
	MaxBucketedPoints int64
	// MaxMutationsPerCommit caps the mutations one write transaction
	// buffers. Zero means 60,000, leaving room under Spanner's 80,000 for
	// the series and run rows a chunk also updates.
	MaxMutationsPerCommit int
	// SessionClients are more clients of the same database, for the Cloud
	// Spanner emulator only; leave it empty on Spanner. With it, each store
	// call runs alone on one client (of the one given to New and these) and
	// calls beyond that number wait for a free client.
	//
	// The Go client gives each Client one multiplexed session and runs all
	// its transactions on it. The emulator this project tests on (1.5.28,
	// from the Cloud SDK) predates multiplexed sessions: it treats that
	// session as an ordinary one, which holds one transaction at a time, so
	// a transaction that begins invalidates the ones still running and
	// these fail with FailedPrecondition "Invalid transaction ID", which no
	// client retries (emulator 1.5.38 added multiplexed sessions; see
	// GoogleCloudPlatform/cloud-spanner-emulator#264 and #282 for the bugs
	// of that support since). One call per client is what the client did
	// with its session pool before multiplexed sessions: calls on different
	// clients run at once, and the emulator aborts all but one concurrent
	// read-write transaction, which the client retries as it retries
	// Cloud Spanner's aborts. So the store's own code runs unlocked, as
	// on Spanner. While it is set, visitors must not call back into the
	// store (that call could wait for a client forever). A non-nil empty
	// slice runs one call at a time on the one client.
	SessionClients []*spanner.Client
	// MaxBytesPerCommit caps the point payload (tensor bytes) of one write
	// transaction. Zero means 32 MiB, under Spanner's 100 MB commit limit.
	MaxBytesPerCommit int
	// DataTimeStep is how far an experiment's UpdateTime may lag its
	// latest data write: a data write moves it only when the last move is
	// older than this (Store.checkLiveForData). Zero means 5 s.
	DataTimeStep time.Duration
}

// Store is a store.Store on one Spanner database.
type Store struct {
	client       *spanner.Client
	maxMutations int
	maxBucketed  int64
	maxBytes     int
	dataTimeStep time.Duration
	// free holds the clients not running a call, with
	// Options.SessionClients; nil on Spanner.
	free chan *spanner.Client
}

var _ store.Store = (*Store)(nil)

// New returns a Store using client, which the caller owns and closes. One
// client (one session pool) should serve the whole process.
func New(client *spanner.Client, opts Options) *Store {
	s := &Store{client: client, maxMutations: opts.MaxMutationsPerCommit, maxBytes: opts.MaxBytesPerCommit, dataTimeStep: opts.DataTimeStep}
	if s.maxBucketed = opts.MaxBucketedPoints; s.maxBucketed <= 0 {
		s.maxBucketed = DefaultMaxBucketedPoints
	}
	if s.maxMutations <= 0 {
		s.maxMutations = 60_000
	}
	if s.maxBytes <= 0 {
		s.maxBytes = 32 << 20
	}
	if s.dataTimeStep <= 0 {
		s.dataTimeStep = 5 * time.Second
	}
	if opts.SessionClients != nil {
		s.free = make(chan *spanner.Client, 1+len(opts.SessionClients))
		s.free <- client
		for _, c := range opts.SessionClients {
			s.free <- c
		}
	}
	return s
}

// acquire returns the store to run one call on and its release; every
// exported method begins with
//
//	s, release := s.acquire()
//	defer release()
//
// On Spanner that is s itself. With Options.SessionClients it is a copy of
// s bound to a client no other call is using, which release returns.
func (s *Store) acquire() (*Store, func()) {
	if s.free == nil {
		return s, func() {}
	}
	c := <-s.free
	bound := *s
	bound.client = c
	return &bound, func() { s.free <- c }
}

// fail wraps err for the caller: store sentinels pass through, Spanner codes
// become the matching sentinel, and the operation name prefixes the text.
func fail(op string, err error) error {
	if err == nil {
		return nil
	}
	for _, sentinel := range []error{store.ErrNotFound, store.ErrAlreadyExists, store.ErrInvalidArgument,
		store.ErrFailedPrecondition, store.ErrUnavailable, context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, sentinel) {
			return fmt.Errorf("spannerstore.%s: %w", op, err)
		}
	}
	switch spanner.ErrCode(err) {
	case codes.NotFound:
		return fmt.Errorf("spannerstore.%s: %w: %v", op, store.ErrNotFound, err)
	case codes.AlreadyExists:
		return fmt.Errorf("spannerstore.%s: %w: %v", op, store.ErrAlreadyExists, err)
	case codes.Aborted, codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted:
		return fmt.Errorf("spannerstore.%s: %w: %v", op, store.ErrUnavailable, err)
	}
	return fmt.Errorf("spannerstore.%s: %w", op, err)
}

// txReader is what read-only and read-write transactions share.
type txReader interface {
	ReadRow(ctx context.Context, table string, key spanner.Key, columns []string) (*spanner.Row, error)
	Read(ctx context.Context, table string, keys spanner.KeySet, columns []string) *spanner.RowIterator
	ReadWithOptions(ctx context.Context, table string, keys spanner.KeySet, columns []string, opts *spanner.ReadOptions) *spanner.RowIterator
	Query(ctx context.Context, statement spanner.Statement) *spanner.RowIterator
}

// experimentState reads Experiments.State; "" if there is no row.
func experimentState(ctx context.Context, tx txReader, eid string) (string, error) {
	row, err := tx.ReadRow(ctx, "Experiments", spanner.Key{eid}, []string{"State"})
	if spanner.ErrCode(err) == codes.NotFound {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var state string
	err = row.Column(0, &state)
	return state, err
}

// checkLive returns store.ErrNotFound unless the experiment exists and is
// not deleted. In a read-write transaction the read also locks the row
// against a concurrent delete.
func checkLive(ctx context.Context, tx txReader, eid string) error {
	state, err := experimentState(ctx, tx, eid)
	if err != nil {
		return err
	}
	if state != stateLive {
		return fmt.Errorf("experiment %q: %w", eid, store.ErrNotFound)
	}
	return nil
}

// checkLiveForData is checkLive for a transaction that writes the
// experiment's data. In the same read it gets the experiment's DataTime and,
// when that is unset or more than Options.DataTimeStep old by this process's
// clock, buffers the move of UpdateTime and DataTime to the commit time. So
// of all the concurrent writers of one experiment at most one per step
// writes the experiment row, which the others only read: the gallery's
// order comes from an index on UpdateTime
// (schemas/spanner/ddl/0015_experiment_facts.sql) without every writer of an
// experiment contending on one cell.
func (s *Store) checkLiveForData(ctx context.Context, tx *spanner.ReadWriteTransaction, eid string) error {
	row, err := tx.ReadRow(ctx, "Experiments", spanner.Key{eid}, []string{"State", "DataTime"})
	if spanner.ErrCode(err) == codes.NotFound {
		return fmt.Errorf("experiment %q: %w", eid, store.ErrNotFound)
	}
	if err != nil {
		return err
	}
	var state string
	var dataTime spanner.NullTime
	if err := row.Columns(&state, &dataTime); err != nil {
		return err
	}
	if state != stateLive {
		return fmt.Errorf("experiment %q: %w", eid, store.ErrNotFound)
	}
	if dataTime.Valid && time.Since(dataTime.Time) < s.dataTimeStep {
		return nil
	}
	return tx.BufferWrite([]*spanner.Mutation{spanner.Update("Experiments",
		[]string{"ExperimentId", "UpdateTime", "DataTime"}, []any{eid, spanner.CommitTimestamp, spanner.CommitTimestamp})})
}

// readOnly runs f in a strong read-only transaction after checking that the
// experiment is live. The check's read begins the transaction (no
// BeginTransaction call of its own).
func (s *Store) readOnly(ctx context.Context, eid string, f func(tx *spanner.ReadOnlyTransaction) error) error {
	tx := s.client.ReadOnlyTransaction().WithBeginTransactionOption(spanner.InlinedBeginTransaction)
	defer tx.Close()
	if err := checkLive(ctx, tx, eid); err != nil {
		return err
	}
	return f(tx)
}

// seriesKey is the primary key of a TimeSeries row.
func seriesKey(eid, run, tag string) spanner.Key { return spanner.Key{eid, run, tag} }

// nullFloat turns a NULL-able FLOAT64 into NaN when NULL.
func nullFloat(v spanner.NullFloat64) float64 {
	if !v.Valid {
		return math.NaN()
	}
	return v.Float64
}
