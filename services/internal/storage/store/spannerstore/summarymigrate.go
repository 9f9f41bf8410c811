package spannerstore

import (
	"context"
	"fmt"

	"cloud.google.com/go/spanner"
	"google.golang.org/grpc/codes"

	"github.com/tbhub/tbhub/services/internal/storage/scalarchunk"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// SummarizeScalars builds the summaries of the chunked scalar series of
// live experiments long enough to keep them that have none: written
// before summaries existed, or whose summaries a write of earlier steps
// dropped. One series per transaction, which reads its chunks of all
// points and writes its summary rows (the write path's rule for a series
// reaching its size), calling progress after each (Series, Points; the
// totals of what it found). Resumable: a rerun finds only the series
// left; a series given summaries meanwhile is skipped.
func (s *Store) SummarizeScalars(ctx context.Context, progress func(ConversionProgress)) error {
	s, release := s.acquire()
	defer release()
	type todo struct {
		eid      string
		run, tag string
		points   int64
	}
	var list []todo
	var p ConversionProgress
	err := s.client.Single().Query(ctx, spanner.Statement{
		SQL: `SELECT ts.ExperimentId, ts.RunName, ts.Tag, ts.PointCount
			FROM Experiments AS e JOIN TimeSeries AS ts ON ts.ExperimentId = e.ExperimentId
			WHERE e.State = @live AND ts.DataClass = @scalar AND ts.SeriesId IS NOT NULL
			AND ts.PointCount >= @min AND ts.HeadSteps[SAFE_OFFSET(@base)] IS NULL`,
		Params: map[string]any{
			"live": stateLive, "scalar": int64(store.DataClassScalar),
			"min":  scalarchunk.LevelMinSegments * scalarchunk.SegmentCap(scalarchunk.BaseSummaryLevel),
			"base": int64(headIndex(scalarchunk.BaseSummaryLevel)),
		},
	}).Do(func(row *spanner.Row) error {
		var t todo
		if err := row.Columns(&t.eid, &t.run, &t.tag, &t.points); err != nil {
			return err
		}
		list = append(list, t)
		p.TotalSeries++
		p.TotalPoints += t.points
		return nil
	})
	if err != nil {
		return fail("SummarizeScalars", err)
	}
	for _, t := range list {
		if err := ctx.Err(); err != nil {
			return fail("SummarizeScalars", err) // stopped between two series
		}
		_, err := s.client.ReadWriteTransaction(ctx, func(ctx context.Context, tx *spanner.ReadWriteTransaction) error {
			return summarizeSeries(ctx, tx, t.eid, t.run, t.tag)
		})
		if err != nil {
			return fail("SummarizeScalars", fmt.Errorf("series (%q, %q) of experiment %s: %w", t.run, t.tag, t.eid, err))
		}
		p.Series++
		p.Points += t.points
		if progress != nil {
			progress(p)
		}
	}
	return nil
}

// summarizeSeries builds the summaries of one series in tx, if it still
// has none.
func summarizeSeries(ctx context.Context, tx *spanner.ReadWriteTransaction, eid, run, tag string) error {
	row, err := tx.ReadRow(ctx, "TimeSeries", seriesKey(eid, run, tag), []string{"SeriesId", "HeadSteps"})
	if spanner.ErrCode(err) == codes.NotFound { // deleted meanwhile
		return nil
	}
	if err != nil {
		return err
	}
	st := &seriesState{}
	if err := row.Columns(&st.seriesID, &st.headSteps); err != nil {
		return err
	}
	if !st.seriesID.Valid || hasSummaries(st.headSteps) {
		return nil
	}
	id := st.seriesID.Int64
	from := spanner.Key{eid, id, int64(scalarchunk.AllLevels)}
	got, err := readChunks(ctx, tx, []spanner.KeySet{spanner.KeyRange{Start: from, End: from, Kind: spanner.ClosedClosed}})
	if err != nil {
		return err
	}
	var points []store.ScalarPoint
	for _, c := range got[levelKey{id, scalarchunk.AllLevels}] {
		if points, err = scalarchunk.Decode(c.chunk, points); err != nil {
			return err
		}
	}
	// As the write of every point to a new series.
	st.pointCount = int64(len(points))
	w := &chunkWriter{eid: eid}
	w.dropSummaries(id, st)
	if err := w.summaries(ctx, tx, id, st, points, true, map[levelKey][]storedChunk{}); err != nil {
		return err
	}
	w.ms = append(w.ms, spanner.Update("TimeSeries", []string{"ExperimentId", "RunName", "Tag", "HeadSteps"}, []any{eid, run, tag, st.headSteps}))
	return tx.BufferWrite(w.ms)
}
