package spannerstore

import (
	"context"
	"fmt"

	"github.com/tbhub/tbhub/services/internal/downsample"
	"github.com/tbhub/tbhub/services/internal/store"
)

// DefaultMaxBucketedPoints is Options.MaxBucketedPoints's default: Spanner
// keeps no summaries yet, so a bucketed read reads every point of its
// windows and reduces them (downsample.BucketPoints).
const DefaultMaxBucketedPoints = 2_000_000

// readScalarBuckets answers a bucketed read (q.Buckets > 0) from the
// windows' points, exactly; ErrFailedPrecondition past s.maxBucketed.
func (s *Store) readScalarBuckets(ctx context.Context, eid string, q store.Query, fn store.ScalarVisitor) error {
	all := q
	all.Buckets, all.MaxPoints = 0, store.AllPoints
	var (
		cur    *store.TimeSeries
		points []store.ScalarPoint
		read   int64
	)
	emit := func() error {
		if cur == nil {
			return nil
		}
		return fn(cur, downsample.BucketPoints(points, q.Buckets))
	}
	err := s.ReadScalars(ctx, eid, all, func(ts *store.TimeSeries, ps []store.ScalarPoint) error {
		if cur == nil || cur.Run != ts.Run || cur.Tag != ts.Tag {
			if err := emit(); err != nil {
				return err
			}
			c := *ts
			cur, points = &c, points[:0]
		}
		if read += int64(len(ps)); read > s.maxBucketed {
			return fmt.Errorf("a bucketed read on Spanner reads every point of its windows, at most %d: narrow the step window or the series: %w", s.maxBucketed, store.ErrFailedPrecondition)
		}
		points = append(points, ps...)
		return nil
	})
	if err != nil {
		return err
	}
	return emit()
}
