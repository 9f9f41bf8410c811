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
