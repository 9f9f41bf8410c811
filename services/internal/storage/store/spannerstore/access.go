package spannerstore

import (
	"context"
	"fmt"

	"cloud.google.com/go/spanner"

	"github.com/tbhub/tbhub/services/internal/storage/store"
)

var _ store.AccessReader = (*Store)(nil)

// accessSQL reads an experiment's row and read grants: what every call's
// access check needs, without the counts' pass over TimeSeries.
const accessSQL = `SELECT e.ExperimentId, e.Name, e.Description, e.OwnerId, e.Visibility, e.CreateTime, e.UpdateTime,
  ARRAY(SELECT g.UserId FROM ReadGrants g WHERE g.ExperimentId = e.ExperimentId ORDER BY g.UserId)
FROM Experiments e
WHERE e.State = 'LIVE' AND e.ExperimentId = @eid`

// GetExperimentAccess implements store.AccessReader.
func (s *Store) GetExperimentAccess(ctx context.Context, eid string) (store.Experiment, error) {
	s, release := s.acquire()
	defer release()
	var e store.Experiment
	found := false
	err := s.client.Single().Query(ctx, spanner.Statement{SQL: accessSQL, Params: map[string]any{"eid": eid}}).
		Do(func(row *spanner.Row) error {
			var vis string
			found = true
			err := row.Columns(&e.ID, &e.Name, &e.Description, &e.Owner, &vis, &e.CreateTime, &e.UpdateTime, &e.Readers)
			e.Visibility = store.Visibility(vis)
			return err
		})
	if err == nil && !found {
		err = fmt.Errorf("experiment %q: %w", eid, store.ErrNotFound)
	}
	return e, fail("GetExperimentAccess", err)
}
