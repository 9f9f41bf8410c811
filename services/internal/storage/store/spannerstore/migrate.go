package spannerstore

import (
	"context"
	"fmt"

	"cloud.google.com/go/spanner"
	database "cloud.google.com/go/spanner/admin/database/apiv1"
	"cloud.google.com/go/spanner/admin/database/apiv1/databasepb"
	"google.golang.org/api/iterator"

	spannerschema "github.com/tbhub/tbhub/schemas/spanner"
)

// Migrate brings the database dbName
// ("projects/P/instances/I/databases/D") up to the embedded schema. It
// applies, in order, each DDL file of package spannerschema whose version is
// not yet recorded in SchemaMigrations, recording it after its statements
// succeed. Running it again is a no-op, so deploys can always run it.
//
// Two Migrate calls racing on one database may both try a file; the loser
// fails on the duplicate DDL and a rerun finds nothing left to do.
func Migrate(ctx context.Context, admin *database.DatabaseAdminClient, dbName string) error {
	migrations, err := spannerschema.Migrations()
	if err != nil {
		return fmt.Errorf("spannerstore.Migrate: %w", err)
	}
	client, err := spanner.NewClient(ctx, dbName)
	if err != nil {
		return fmt.Errorf("spannerstore.Migrate: %w", err)
	}
	defer client.Close()
	applied, err := appliedVersions(ctx, client)
	if err != nil {
		return fmt.Errorf("spannerstore.Migrate: %w", err)
	}
	for _, m := range migrations {
		if applied[m.Version] {
			continue
		}
		op, err := admin.UpdateDatabaseDdl(ctx, &databasepb.UpdateDatabaseDdlRequest{
			Database:   dbName,
			Statements: m.Statements,
		})
		if err == nil {
			err = op.Wait(ctx)
		}
		if err != nil {
			return fmt.Errorf("spannerstore.Migrate: applying %s: %w", m.Name, err)
		}
		_, err = client.Apply(ctx, []*spanner.Mutation{spanner.InsertOrUpdate("SchemaMigrations",
			[]string{"Version", "Name", "AppliedTime"},
			[]any{m.Version, m.Name, spanner.CommitTimestamp})})
		if err != nil {
			return fmt.Errorf("spannerstore.Migrate: recording %s: %w", m.Name, err)
		}
	}
	return nil
}

// appliedVersions reads SchemaMigrations; a database without that table
// (a new one) has nothing applied.
func appliedVersions(ctx context.Context, client *spanner.Client) (map[int64]bool, error) {
	ro := client.ReadOnlyTransaction()
	defer ro.Close()
	var n int64
	err := ro.Query(ctx, spanner.Statement{SQL: `SELECT COUNT(*) FROM INFORMATION_SCHEMA.TABLES
		WHERE TABLE_SCHEMA = '' AND TABLE_NAME = 'SchemaMigrations'`}).Do(func(r *spanner.Row) error {
		return r.Column(0, &n)
	})
	if err != nil {
		return nil, fmt.Errorf("looking for SchemaMigrations: %w", err)
	}
	applied := map[int64]bool{}
	if n == 0 {
		return applied, nil
	}
	it := ro.Read(ctx, "SchemaMigrations", spanner.AllKeys(), []string{"Version"})
	defer it.Stop()
	for {
		row, err := it.Next()
		if err == iterator.Done {
			return applied, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading SchemaMigrations: %w", err)
		}
		var v int64
		if err := row.Column(0, &v); err != nil {
			return nil, err
		}
		applied[v] = true
	}
}

// backfillTimesSQL moves UpdateTime and DataTime of each experiment of
// @ids whose series were written after its row by a release before DDL
// 0015 (which left the data writes' time on the series only) to the latest
// of those writes. Idempotent: the rows it sets have a DataTime, and so do
// those a write since 0015 moved. Not partitioned DML, which cannot read
// another table.
const backfillTimesSQL = `UPDATE Experiments e
SET UpdateTime = (SELECT MAX(s.UpdateTime) FROM TimeSeries s WHERE s.ExperimentId = e.ExperimentId),
  DataTime = (SELECT MAX(s.UpdateTime) FROM TimeSeries s WHERE s.ExperimentId = e.ExperimentId)
WHERE e.ExperimentId IN UNNEST(@ids) AND e.DataTime IS NULL
  AND (SELECT MAX(s.UpdateTime) FROM TimeSeries s WHERE s.ExperimentId = e.ExperimentId) > e.UpdateTime`

// backfillBatch is how many experiments one backfill transaction updates.
const backfillBatch = 100

// BackfillExperimentTimes gives experiments written before DDL 0015 the
// update time of their latest data write (backfillTimesSQL), which the
// public gallery sorts by, and returns how many rows it changed. `tbhub
// migrate` runs it after the DDL; a rerun changes nothing.
func (s *Store) BackfillExperimentTimes(ctx context.Context) (int64, error) {
	s, release := s.acquire()
	defer release()
	var ids []string
	err := s.client.Single().Query(ctx, spanner.Statement{SQL: "SELECT ExperimentId FROM Experiments WHERE DataTime IS NULL"}).Do(func(row *spanner.Row) error {
		var id string
		if err := row.Column(0, &id); err != nil {
			return err
		}
		ids = append(ids, id)
		return nil
	})
	if err != nil {
		return 0, fail("BackfillExperimentTimes", err)
	}
	var total int64
	for len(ids) > 0 {
		batch := ids[:min(backfillBatch, len(ids))]
		ids = ids[len(batch):]
		var n int64
		_, err := s.client.ReadWriteTransaction(ctx, func(ctx context.Context, tx *spanner.ReadWriteTransaction) error {
			var err error
			n, err = tx.Update(ctx, spanner.Statement{SQL: backfillTimesSQL, Params: map[string]any{"ids": batch}})
			return err
		})
		if err != nil {
			return total, fail("BackfillExperimentTimes", err)
		}
		total += n
	}
	return total, nil
}
