// Package store defines what tbhub keeps about experiments and how the
// services read and write it: the domain types, the Reader, Writer and
// Sweeper interfaces every backend implements (Cloud Spanner in
// store/spannerstore, SQLite in store/sqlitestore), and the sentinel errors
// they return. Every backend passes the same conformance suite,
// store/storetest.
//
// The package has no generated-proto dependencies: summary metadata and
// tensors are kept as opaque serialized bytes next to the few fields the
// store itself needs decoded (plugin name, data class, dtype, shape).
//
// # Keys
//
// An experiment is identified by an unguessable ID (NewExperimentID). Inside
// it a time series is identified by (run, tag) and a point by (run, tag,
// step); a blob by (run, tag, step, index). Every write is keyed this way and
// is therefore idempotent: writing the same batch twice leaves the store as
// after the first write, and a later write of an existing step replaces the
// point. Within one call, later entries for the same key win.
//
// A time series' metadata (plugin name, summary metadata, data class,
// display name, description) is fixed by the first write that creates it
// ("first write wins", as in TensorBoard); later writes may repeat or omit
// it and never change it.
//
// # Deletion
//
// DeleteExperiment marks an experiment deleted in one transaction: from then
// on every method given its ID behaves as if it did not exist (ErrNotFound).
// Its rows and blob objects are removed later by Sweep.
package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/tbhub/tbhub/schemas/experimentid"
)

// Sentinel errors. Backends wrap them (fmt.Errorf("...: %w", ErrNotFound))
// and callers test them with errors.Is; the RPC edge maps them to status
// codes. Any other error is internal.
var (
	// ErrNotFound: the experiment, user, series, blob sequence or blob does
	// not exist, or the experiment has been deleted.
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists: a create named an ID or unique name already in use.
	ErrAlreadyExists = errors.New("already exists")
	// ErrInvalidArgument: the request is malformed (empty run or tag name,
	// bad experiment ID, blob index outside its sequence, ...). Permanent.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrFailedPrecondition: the request is well formed but conflicts with
	// stored state, e.g. writing scalars to a series created as tensors.
	// Permanent.
	ErrFailedPrecondition = errors.New("failed precondition")
	// ErrUnavailable: a transient backend failure (contention, timeout,
	// lost connection). The caller may retry; writes are idempotent.
	ErrUnavailable = errors.New("unavailable")
	// ErrConflict: a conditional write (PutBlobIf) found the row changed
	// since the caller read it, by another writer (another stream, another
	// server instance). Nothing was written; the caller may read again
	// and retry.
	ErrConflict = errors.New("changed by another writer")
	// ErrDiskFull: the server's disk is full, or below the free space the
	// server keeps in reserve. Nothing was written; the caller may retry
	// once space is freed. Package blob's ErrDiskFull is this same error.
	ErrDiskFull = errors.New("the server's disk is full")
	// ErrQuotaExceeded: the write would pass a per-user quota; nothing of
	// it was written. Backends return it as a *QuotaError, which says
	// which quota and by how much. Permanent until usage drops.
	ErrQuotaExceeded = errors.New("quota exceeded")
)

// Visibility says who may read an experiment besides its owner and the users
// holding a read grant.
type Visibility string

const (
	// VisibilityPrivate: the owner and granted readers only.
	VisibilityPrivate Visibility = "private"
	// VisibilityUnlisted: anyone who knows the ID; never listed publicly.
	VisibilityUnlisted Visibility = "unlisted"
	// VisibilityPublic: anyone; may appear in public listings.
	VisibilityPublic Visibility = "public"
)

// Valid reports whether v is one of the three visibilities.
func (v Visibility) Valid() bool {
	switch v {
	case VisibilityPrivate, VisibilityUnlisted, VisibilityPublic:
		return true
	}
	return false
}

// DataClass is how a time series' values are stored. The numbers are those
// of tensorboard.DataClass in summary.proto.
type DataClass int32

const (
	// DataClassUnknown is never stored; in ListSeries it matches every class.
	DataClassUnknown      DataClass = 0
	DataClassScalar       DataClass = 1
	DataClassTensor       DataClass = 2
	DataClassBlobSequence DataClass = 3
)

func (c DataClass) String() string {
	switch c {
	case DataClassScalar:
		return "scalar"
	case DataClassTensor:
		return "tensor"
	case DataClassBlobSequence:
		return "blob_sequence"
	}
	return fmt.Sprintf("DataClass(%d)", int32(c))
}

// BlobState is the upload state of one blob. The numbers are those of
// tensorboard.service.BlobState in blob.proto.
type BlobState int32

const (
	BlobStateUnknown BlobState = 0
	// BlobStateUnfinalized: the upload has started and not finished; Size
	// and CRC32C cover the bytes received so far.
	BlobStateUnfinalized BlobState = 1
	// BlobStateCurrent: the object is complete and verified; readable.
	BlobStateCurrent BlobState = 2
)

// User is an account. Tokens and authentication live elsewhere.
type User struct {
	ID   string // opaque, assigned by the caller; non-empty
	Name string // unique, non-empty; an OIDC user's email: never shown to others
	// DisplayName is the name the user chose to show others
	// (IdentityStore.SetDisplayName); empty until they choose one. See
	// PublicName.
	DisplayName string
	// CreateTime is set by the store.
	CreateTime time.Time
}

// Experiment is one uploaded logdir and its metadata.
type Experiment struct {
	ID          string // see NewExperimentID
	Name        string
	Description string // markdown
	Owner       string // User.ID
	Visibility  Visibility

	// The fields below are output-only: the store sets them and ignores
	// them on CreateExperiment.

	// Readers are the user IDs holding a read grant, sorted.
	Readers []string
	// CreateTime is when the experiment was created; UpdateTime when it or
	// its data last changed.
	CreateTime, UpdateTime time.Time
	// Counts over the experiment's data. NumTags counts distinct tag names
	// across runs; NumScalars, NumTensors and NumBlobSequences count points
	// of each class; NumBlobs and TotalBlobBytes count current blobs only.
	NumRuns          int64
	NumTags          int64
	NumScalars       int64
	NumTensors       int64
	NumBlobSequences int64
	NumBlobs         int64
	TotalTensorBytes int64 // sum of len(TensorPoint.Tensor)
	TotalBlobBytes   int64

	// Damaged is what the uploader last reported it skipped as damaged
	// (ExperimentUpdate.Damaged); zero when it reported nothing.
	Damaged Damage
}

// Damage is what an uploader could not read of an experiment's event
// files: Records damaged records in NumFiles files, the first of which
// are Files ("RUN/FILE"). The write service bounds it; stores keep it as
// given.
type Damage struct {
	Records  int64
	NumFiles int64
	Files    []string
}

// ExperimentUpdate changes the fields that are non-nil.
type ExperimentUpdate struct {
	Name        *string
	Description *string
	Visibility  *Visibility
	Damaged     *Damage // replaces the experiment's Damaged
}

// ExperimentFilter selects experiments for ListExperiments.
type ExperimentFilter struct {
	// Owner, if non-empty, keeps only that user's experiments.
	Owner string
	// Visibilities, if non-nil, keeps only experiments with one of these
	// visibilities (an empty non-nil slice keeps none).
	Visibilities []Visibility
}

// MaxPublicPage bounds PublicQuery.Limit.
const MaxPublicPage = 100

// PublicQuery selects one page of the public gallery for
// ListPublicExperiments.
type PublicQuery struct {
	// Search, if non-empty, keeps the experiments whose name, description
	// or owner's public name (User.PublicName: never the user name, which
	// may be an email) contains it, ignoring case (Unicode simple case
	// folding: both backends compare lower-cased text).
	Search string
	// Limit is the page size, 1 to MaxPublicPage (ErrInvalidArgument
	// otherwise).
	Limit int
	// After, if its ID is non-empty, continues after that position: the
	// UpdateTime and ID of the last experiment of the previous page.
	After PublicCursor
}

// Validate reports a page size out of range (ErrInvalidArgument): what
// every backend's ListPublicExperiments checks first.
func (q PublicQuery) Validate() error {
	if q.Limit < 1 || q.Limit > MaxPublicPage {
		return fmt.Errorf("limit %d not in [1, %d]: %w", q.Limit, MaxPublicPage, ErrInvalidArgument)
	}
	return nil
}

// PublicCursor is a position in the public gallery's order.
type PublicCursor struct {
	UpdateTime time.Time
	ID         string
}

// Run is one run of an experiment. Runs come into being with the first
// point written to one of their series, or with PutRuns (a run whose event
// files hold no data yet, which TensorBoard lists all the same).
type Run struct {
	Name string
	// StartTime (seconds since the Unix epoch) is TensorBoard's: the wall
	// time of the run's first event, file_version event included, as the
	// uploader read it and gave it to PutRuns. For a run no uploader gave
	// one for (TensorBoard's own uploader sends points only) it is the
	// smallest wall time of any point ever written to the run, NaN values
	// ignored: the closest to that first event the points tell. 0 if
	// neither is known.
	StartTime float64
}

// TimeSeries is a (run, tag) and the metadata fixed by its first write.
type TimeSeries struct {
	Run string // non-empty
	Tag string // non-empty
	// PluginName is the owning plugin (SummaryMetadata.plugin_data.plugin_name),
	// possibly empty.
	PluginName string
	// SummaryMetadata is a serialized tensorboard.SummaryMetadata, kept
	// opaque; nil and empty are the same.
	SummaryMetadata []byte
	DataClass       DataClass
	DisplayName     string
	Description     string
}

// SeriesSummary is a time series with facts about its points, as returned by
// ListSeries.
type SeriesSummary struct {
	TimeSeries
	// PointCount is the number of distinct steps stored.
	PointCount int64
	// MaxStep is the largest step stored (0 if PointCount is 0).
	MaxStep int64
	// MaxWallTime is the largest wall time of any point written to the
	// series; rewriting a step never lowers it.
	MaxWallTime float64
	// MaxLength is, for blob sequences, the largest Length of any point;
	// 0 for other classes.
	MaxLength int64
}

// ScalarPoint is one scalar value. NaN and ±Inf are stored and returned as
// they are.
type ScalarPoint struct {
	Step     int64
	WallTime float64 // seconds since the Unix epoch
	Value    float64
}

// TensorPoint is one tensor value.
type TensorPoint struct {
	Step     int64
	WallTime float64
	// DType is the tensorboard.DataType number; Shape the dimension sizes.
	// Both are copies of fields inside Tensor, kept for queries.
	DType int32
	Shape []int64
	// Tensor is a serialized tensorboard.TensorProto, kept opaque.
	Tensor []byte
}

// BlobSequencePoint is one step of a blob sequence: Length upload slots,
// numbered 0..Length-1, of which Blobs are the ones that have a row.
type BlobSequencePoint struct {
	Step     int64
	WallTime float64
	Length   int64
	// Blobs is sorted by Index; slots never written are absent. Read
	// methods include blobs in every state; callers decide what to show.
	Blobs []Blob
}

// Blob is one object of a blob sequence. The object's bytes live in a blob
// store under ObjectKey; the row is written after the object (see PutBlob).
type Blob struct {
	Index     int64
	ObjectKey string
	Size      int64
	CRC32C    uint32 // Castagnoli CRC of the Size bytes, unmasked
	State     BlobState
	// Generation is the blob store generation (blob.Attrs.Generation) of
	// the object the row stands for; 0 when no object is known to stand
	// for it (a row written before the upload's first commit, or by a
	// release that recorded none).
	Generation int64
}

// BlobMatch is what a conditional blob row write (PutBlobIf) expects to
// find: no row (Exists false), or a row recording Generation.
type BlobMatch struct {
	Exists     bool
	Generation int64
}

// CheckBlobMatch is the condition of PutBlobIf, for backends: old is the
// row as stored (nil for none), b the row to write. It returns ErrConflict
// unless old matches want and the write does not turn a current row back
// into an unfinished one.
func CheckBlobMatch(old *Blob, b Blob, want BlobMatch) error {
	switch {
	case old == nil && want.Exists:
		return fmt.Errorf("blob row gone since it was read: %w", ErrConflict)
	case old != nil && !want.Exists:
		return fmt.Errorf("blob row written since it was read: %w", ErrConflict)
	case old != nil && old.Generation != want.Generation:
		return fmt.Errorf("blob row at generation %d, expected %d: %w", old.Generation, want.Generation, ErrConflict)
	case old != nil && old.State == BlobStateCurrent && b.State != BlobStateCurrent:
		return fmt.Errorf("blob already current: %w", ErrConflict)
	}
	return nil
}

// MatchOf is the BlobMatch of a row as read; nil for no row.
func MatchOf(b *Blob) BlobMatch {
	if b == nil {
		return BlobMatch{}
	}
	return BlobMatch{Exists: true, Generation: b.Generation}
}

// SameWallTime reports whether two wall times are the same write's: equal, or
// both NaN (no wall time).
func SameWallTime(a, b float64) bool {
	return a == b || (math.IsNaN(a) && math.IsNaN(b))
}

// ValidatePageLimit reports a page size below 1 (ErrInvalidArgument).
func ValidatePageLimit(limit int) error {
	if limit < 1 {
		return fmt.Errorf("page limit %d: want at least 1: %w", limit, ErrInvalidArgument)
	}
	return nil
}

// DistinctNames returns names sorted, each once.
func DistinctNames(names []string) []string {
	return slices.Compact(slices.Sorted(slices.Values(names)))
}

// SeriesRef names a series inside an experiment.
type SeriesRef struct {
	Run, Tag string
}

// BlobRef names one blob inside an experiment.
type BlobRef struct {
	Run, Tag string
	Step     int64
	Index    int64
}

// ScalarSeries is a batch of scalar points for one series. Series carries
// the metadata used if the series does not exist yet; its DataClass must be
// DataClassScalar or DataClassUnknown (taken as scalar).
type ScalarSeries struct {
	Series TimeSeries
	Points []ScalarPoint
}

// TensorSeries is a batch of tensor points for one series; as ScalarSeries,
// with DataClassTensor.
type TensorSeries struct {
	Series TimeSeries
	Points []TensorPoint
}

// Filter selects time series by run, tag and plugin. For each field nil
// means "all" and an empty non-nil slice means "none" (the RunTagFilter rule
// of TensorBoard's data provider); otherwise names match exactly.
type Filter struct {
	Runs    []string
	Tags    []string
	Plugins []string
}

// AllPoints as Query.MaxPoints reads every point of every selected series
// (no downsampling), streamed in step order.
const AllPoints int64 = math.MaxInt64

// Query selects series (Filter), a window of their points (MinStep, MaxStep,
// MaxWallTime; nil = unbounded; bounds inclusive) and downsamples the window
// to at most MaxPoints points per series with downsample.Select's rule: the
// point with the largest step in the window plus the MaxPoints-1 others with
// the smallest downsample.SampleKey, returned in step order. MaxPoints 0
// selects no points; negative is ErrInvalidArgument.
//
// Buckets > 0 asks for a bucketed read instead (MaxPoints is then
// ignored): the window's points, from its first stored step to its last,
// cut into Buckets buckets of equal step width, and of each non-empty
// bucket the points downsample.Summary keeps (first, last, lowest,
// highest, first NaN: at most five, real points in step order), so no
// spike, NaN or ±Inf is dropped. A backend may answer from summaries it
// keeps of runs of consecutive points when the window holds more than
// MaxExactBucketPoints points per bucket: a run is then counted in the
// bucket where it starts, moving that bucket's end to the run's end (the
// answer is still real points, the window's first and last, and its
// extremes and first NaN). With at most that many per bucket the answer is
// exactly downsample.BucketPoints of the window's points. A bucketed read
// takes no MaxWallTime (ErrInvalidArgument).
type Query struct {
	Filter
	MinStep     *int64
	MaxStep     *int64
	MaxWallTime *float64
	MaxPoints   int64
	Buckets     int
}

// MaxExactBucketPoints is the number of points per bucket up to which a
// bucketed read (Query.Buckets) is exact; see Query.
const MaxExactBucketPoints = 256

// Point visitors receive the points of a read. A visitor is called at least
// once for every selected series (with an empty slice when the window holds
// no point), series in (run, tag) order; the calls for one series are
// consecutive and their points ascend by step. The slice and the series are
// only valid during the call. Returning an error stops the read, which
// returns that error. A visitor must not call the same store: the read may
// hold a connection or transaction until it returns.
type (
	ScalarVisitor       func(s *TimeSeries, points []ScalarPoint) error
	TensorVisitor       func(s *TimeSeries, points []TensorPoint) error
	BlobSequenceVisitor func(s *TimeSeries, points []BlobSequencePoint) error
)

// Reader reads experiments. Every method given an experiment ID returns
// ErrNotFound if the experiment does not exist or is deleted.
type Reader interface {
	GetUser(ctx context.Context, id string) (User, error)
	GetUserByName(ctx context.Context, name string) (User, error)

	GetExperiment(ctx context.Context, eid string) (Experiment, error)
	// ListExperiments calls fn for each live experiment matching f, newest
	// first (CreateTime descending, then ID).
	ListExperiments(ctx context.Context, f ExperimentFilter, fn func(Experiment) error) error
	// ListPublicExperiments returns up to q.Limit live public experiments
	// matching q.Search, most recently updated first (UpdateTime
	// descending, then ID), after q.After; with their counts. Unlisted
	// and private experiments are never returned.
	ListPublicExperiments(ctx context.Context, q PublicQuery) ([]Experiment, error)

	// ListRuns returns the experiment's runs sorted by name.
	ListRuns(ctx context.Context, eid string) ([]Run, error)
	// ListRunsAfter returns one page of them: up to limit (>= 1, else
	// ErrInvalidArgument) runs whose names sort after the name after ("":
	// from the first), by name (bytewise, as Go compares strings).
	ListRunsAfter(ctx context.Context, eid, after string, limit int) ([]Run, error)
	// CountRuns returns which of names the experiment does not have yet
	// (each once, sorted): what writing them would add; and, if any is
	// missing or names is empty, how many runs it has (total is 0, not
	// counted, when names are given and none is missing: the common case
	// of a write to existing runs costs only the reads of those names'
	// rows). It never reads the list.
	CountRuns(ctx context.Context, eid string, names []string) (total int64, missing []string, err error)
	// ListPlugins returns the distinct plugin names of its series, sorted.
	ListPlugins(ctx context.Context, eid string) ([]string, error)
	// ListSeries returns the series of class c (every class if
	// DataClassUnknown) matching f, sorted by (run, tag).
	ListSeries(ctx context.Context, eid string, c DataClass, f Filter) ([]SeriesSummary, error)

	// ReadScalars, ReadTensors and ReadBlobSequences read the series of
	// their class selected by q; see Query and the visitor types.
	ReadScalars(ctx context.Context, eid string, q Query, fn ScalarVisitor) error
	ReadTensors(ctx context.Context, eid string, q Query, fn TensorVisitor) error
	ReadBlobSequences(ctx context.Context, eid string, q Query, fn BlobSequenceVisitor) error

	// GetBlob returns one blob row in any state; ErrNotFound if no row.
	GetBlob(ctx context.Context, eid string, ref BlobRef) (Blob, error)
}

// Writer changes experiments. Every method given an experiment ID returns
// ErrNotFound if the experiment does not exist or is deleted.
type Writer interface {
	// CreateUser stores u (ID and Name non-empty); ErrAlreadyExists if
	// either is taken.
	CreateUser(ctx context.Context, u User) error
	// SetDisplayName stores the name the user shows others (empty: none,
	// back to the handle) and returns the user; ErrNotFound for an unknown
	// user. The caller has checked the name.
	SetDisplayName(ctx context.Context, userID, name string) (User, error)

	// CreateExperiment stores e; its ID must be valid (ValidateExperimentID),
	// Owner an existing user and Visibility valid. ErrAlreadyExists if the
	// ID is taken.
	CreateExperiment(ctx context.Context, e Experiment) error
	// CreateExperimentOnce is CreateExperiment made safe to retry when
	// the answer is lost: req names the attempt, and the store records,
	// in the same transaction as the experiment, which experiment that
	// request of e.Owner created, until req.Expire. It returns the ID of
	// the experiment the request created: e.ID if this call created it,
	// or, if a record of (e.Owner, req.ID) is live at req.Now, the ID
	// recorded there, creating nothing (that experiment may have been
	// deleted since). An expired record is replaced. req must be valid
	// (CreateRequest.Validate).
	CreateExperimentOnce(ctx context.Context, e Experiment, req CreateRequest) (string, error)
	// CreatedBy returns the ID of the experiment user's request requestID
	// created, if its record is live at now; ErrNotFound otherwise.
	CreatedBy(ctx context.Context, userID, requestID string, now time.Time) (string, error)
	// UpdateExperiment applies u and returns the result.
	UpdateExperiment(ctx context.Context, eid string, u ExperimentUpdate) (Experiment, error)
	// DeleteExperiment makes the experiment and all its data unreadable at
	// once; Sweep removes them later.
	DeleteExperiment(ctx context.Context, eid string) error
	// GrantRead and RevokeRead add and remove a user's read grant; both are
	// idempotent. GrantRead returns ErrNotFound for an unknown user.
	GrantRead(ctx context.Context, eid, userID string) error
	RevokeRead(ctx context.Context, eid, userID string) error

	// WriteScalars and WriteTensors upsert points, creating runs and series
	// as needed. A batch of any size is accepted (backends split it as
	// their commit limits require; a split batch that fails may be partly
	// written, and retrying it is safe). If a series exists with another
	// data class the call fails with ErrFailedPrecondition before writing
	// anything.
	WriteScalars(ctx context.Context, eid string, batch []ScalarSeries) error
	WriteTensors(ctx context.Context, eid string, batch []TensorSeries) error

	// PutRuns creates each run that does not exist yet and records the
	// StartTime of each whose StartTime is not 0 (nor NaN) as the run's
	// start time, replacing one recorded before and any derived from
	// points. A run with StartTime 0 is only created: an empty event file
	// has no first event yet. Run names must be non-empty
	// (ErrInvalidArgument).
	PutRuns(ctx context.Context, eid string, runs []Run) error

	// GetOrCreateBlobSequence returns the blob sequence at (series, step),
	// creating the run, the series (class DataClassBlobSequence) and the
	// point with the given wall time and length (>= 0) if absent. An
	// existing point with the same wall time (SameWallTime) and length is
	// returned unchanged, blobs included: it is the same write again (a
	// retry, a resumed upload). Otherwise the step is being rewritten (a job
	// restarted from a checkpoint) and the last write wins: the point takes
	// the new wall time and length and loses its blob rows, which are
	// returned as replaced so that the caller can delete their objects.
	GetOrCreateBlobSequence(ctx context.Context, eid string, series TimeSeries, step int64, wallTime float64, length int64) (point BlobSequencePoint, replaced []Blob, err error)
	// PutBlob upserts the row of blob ref. The blob sequence must exist
	// (ErrNotFound) and 0 <= ref.Index < its Length (ErrInvalidArgument).
	// Write the object to the blob store first and the row last: a
	// BlobStateCurrent row is the proof that the object is complete. The
	// store records when an unfinished row was last written
	// (ListAbandonedBlobs); writing the same row again refreshes it.
	PutBlob(ctx context.Context, eid string, ref BlobRef, b Blob) error
	// PutBlobIf is PutBlob, done only if the row is still as want says
	// (compared in the transaction that writes it), and never turning a
	// current row back into an unfinished one: otherwise ErrConflict and
	// nothing changes. Writers that may race (two server instances on one
	// blob) use it; a row whose generation moved on belongs to another
	// writer's object.
	PutBlobIf(ctx context.Context, eid string, ref BlobRef, b Blob, want BlobMatch) error
}

// AbandonedBlob is an unfinished blob whose row was last written before
// some time, as ListAbandonedBlobs finds it.
type AbandonedBlob struct {
	Experiment string
	Ref        BlobRef
	ObjectKey  string
	Size       int64
	Generation int64 // of the object, as the row records it
	// WriteTime is when its row was last written.
	WriteTime time.Time
}

// Sweeper is the background half of DeleteExperiment (see Sweep) and the
// remover of abandoned unfinished blobs (see SweepAbandonedBlobs).
type Sweeper interface {
	// ListDeletedExperiments returns up to limit IDs of experiments that are
	// deleted and not yet purged.
	ListDeletedExperiments(ctx context.Context, limit int) ([]string, error)
	// ListObjectKeys calls fn with the ObjectKey of every blob row of a
	// deleted experiment; ErrFailedPrecondition if the experiment is live.
	ListObjectKeys(ctx context.Context, eid string, fn func(objectKey string) error) error
	// PurgeExperiment removes every row of a deleted experiment, the
	// experiment row last; ErrFailedPrecondition if it is live. Purging an
	// unknown ID succeeds.
	PurgeExperiment(ctx context.Context, eid string) error

	// ListAbandonedBlobs returns up to limit blobs of live experiments
	// that are unfinished (BlobStateUnfinalized) and whose row was last
	// written (PutBlob) before the given time, oldest first. A row
	// written by an older release that kept no write time is never
	// listed.
	ListAbandonedBlobs(ctx context.Context, before time.Time, limit int) ([]AbandonedBlob, error)
	// DeleteAbandonedBlob removes the row of blob ref if it is still
	// unfinished and was last written before the given time, and reports
	// whether it did: a row written since (a stream resumed the upload) or
	// finished stays. A missing row or experiment is not an error.
	DeleteAbandonedBlob(ctx context.Context, eid string, ref BlobRef, before time.Time) (bool, error)

	// DeleteExpiredCreateRequests removes up to limit records of
	// CreateExperimentOnce that expired at or before now and returns how
	// many it removed. The experiments stay.
	DeleteExpiredCreateRequests(ctx context.Context, now time.Time, limit int) (int, error)

	// TakeLease makes holder the holder of the lease called name until
	// now+ttl (ttl > 0, else ErrInvalidArgument), if at now the lease is
	// free: never taken, expired (its expire time is not after now), or
	// held by holder already (a renewal). It reports whether holder holds
	// the lease. The read and the write are one transaction, so of
	// holders racing for a free lease exactly one gets it. Leases keep
	// background work to one server instance at a time; the instances'
	// clocks must agree to well within ttl.
	TakeLease(ctx context.Context, name, holder string, now time.Time, ttl time.Duration) (bool, error)
	// ReleaseLease frees the lease called name if holder holds it, so
	// another holder can take it at once; otherwise it does nothing.
	ReleaseLease(ctx context.Context, name, holder string) error
}

// Store is everything a backend implements: what the write service, the
// read service and the sweeper need, and the identities and tokens package
// auth keeps (IdentityStore).
type Store interface {
	Reader
	Writer
	Sweeper
	IdentityStore
}

// NewExperimentID returns a fresh experiment ID: 128 random bits from
// crypto/rand, unpadded base64url, so it is unguessable and URL-safe
// (package experimentid, which the HTTP side checks IDs with too).
func NewExperimentID() string { return experimentid.New() }

// ValidateExperimentID reports, wrapping ErrInvalidArgument, whether id is
// not of the form NewExperimentID returns.
func ValidateExperimentID(id string) error {
	if !experimentid.Valid(id) {
		return fmt.Errorf("experiment id %q: want %d base64url characters: %w", id, experimentid.Len, ErrInvalidArgument)
	}
	return nil
}

// ValidateNewExperiment reports, wrapping ErrInvalidArgument, what makes e
// impossible to create whatever is stored: an invalid ID or visibility.
func ValidateNewExperiment(e Experiment) error {
	if err := ValidateExperimentID(e.ID); err != nil {
		return err
	}
	if !e.Visibility.Valid() {
		return fmt.Errorf("visibility %q: %w", e.Visibility, ErrInvalidArgument)
	}
	return nil
}

// ValidateLease reports, wrapping ErrInvalidArgument, an empty lease name
// or holder or a ttl that is not positive: what TakeLease checks first.
func ValidateLease(name, holder string, ttl time.Duration) error {
	if name == "" || holder == "" {
		return fmt.Errorf("lease %q held by %q: want both non-empty: %w", name, holder, ErrInvalidArgument)
	}
	if ttl <= 0 {
		return fmt.Errorf("lease %q for %v: want a positive duration: %w", name, ttl, ErrInvalidArgument)
	}
	return nil
}
