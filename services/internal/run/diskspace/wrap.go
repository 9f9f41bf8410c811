package diskspace

import (
	"context"
	"io"

	"github.com/tbhub/tbhub/services/internal/storage/blob"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// Store returns st with the writes that add data refused while m finds
// the disk below its reserve: CreateExperiment (and CreateExperimentOnce), WriteScalars,
// WriteTensors, PutRuns and GetOrCreateBlobSequence. Everything else
// passes: reads, deletes and purges (which free space), and small writes
// (users, tokens, experiment metadata, grants, blob rows, whose objects
// were refused already).
func Store(st store.Store, m *Monitor) store.Store { return &reservedStore{Store: st, m: m} }

type reservedStore struct {
	store.Store
	m *Monitor
}

var _ store.AccessReader = (*reservedStore)(nil)

// GetExperimentAccess implements store.AccessReader, through the wrapped
// store's if it has one.
func (s *reservedStore) GetExperimentAccess(ctx context.Context, eid string) (store.Experiment, error) {
	if ar, ok := s.Store.(store.AccessReader); ok {
		return ar.GetExperimentAccess(ctx, eid)
	}
	return s.Store.GetExperiment(ctx, eid)
}

func (s *reservedStore) CreateExperiment(ctx context.Context, e store.Experiment) error {
	if err := s.m.Check(); err != nil {
		return err
	}
	return s.Store.CreateExperiment(ctx, e)
}

func (s *reservedStore) CreateExperimentOnce(ctx context.Context, e store.Experiment, req store.CreateRequest) (string, error) {
	if err := s.m.Check(); err != nil {
		return "", err
	}
	return s.Store.CreateExperimentOnce(ctx, e, req)
}

func (s *reservedStore) WriteScalars(ctx context.Context, eid string, batch []store.ScalarSeries) error {
	if err := s.m.Check(); err != nil {
		return err
	}
	return s.Store.WriteScalars(ctx, eid, batch)
}

func (s *reservedStore) WriteTensors(ctx context.Context, eid string, batch []store.TensorSeries) error {
	if err := s.m.Check(); err != nil {
		return err
	}
	return s.Store.WriteTensors(ctx, eid, batch)
}

func (s *reservedStore) PutRuns(ctx context.Context, eid string, runs []store.Run) error {
	if err := s.m.Check(); err != nil {
		return err
	}
	return s.Store.PutRuns(ctx, eid, runs)
}

func (s *reservedStore) GetOrCreateBlobSequence(ctx context.Context, eid string, series store.TimeSeries, step int64, wallTime float64, length int64) (store.BlobSequencePoint, []store.Blob, error) {
	if err := s.m.Check(); err != nil {
		return store.BlobSequencePoint{}, nil, err
	}
	return s.Store.GetOrCreateBlobSequence(ctx, eid, series, step, wallTime, length)
}

// Blobs returns b with Put refused while m finds the disk below its
// reserve.
func Blobs(b blob.Store, m *Monitor) blob.Store { return &reservedBlobs{Store: b, m: m} }

type reservedBlobs struct {
	blob.Store
	m *Monitor
}

func (b *reservedBlobs) Put(ctx context.Context, key string, r io.Reader, opts blob.PutOptions) (blob.Attrs, error) {
	if err := b.m.Check(); err != nil {
		return blob.Attrs{}, err
	}
	return b.Store.Put(ctx, key, r, opts)
}
