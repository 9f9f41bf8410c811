package spannerstore_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"sync"
	"testing"

	"cloud.google.com/go/spanner"
	"cloud.google.com/go/spanner/apiv1/spannerpb"
	"google.golang.org/protobuf/types/known/structpb"
)

// commitCounter counts what the commits a client sends write, by Spanner's
// rules for the mutation limit: an insert or update of a row counts its
// columns, plus the columns of each index entry it writes (index key and
// STORING columns, with the table's key); a delete counts one per key or
// range. Bytes are logical bytes: the values written, keys included,
// INT64, FLOAT64 8 bytes, TIMESTAMP 12, BOOL 1, STRING and BYTES their
// length, arrays the sum of their elements, NULL nothing; index entries
// the bytes of their columns again.
type commitCounter struct {
	client  *spanner.Client              // a client of the same database, uncounted
	types   map[string]map[string]string // table -> column -> SPANNER_TYPE
	indexes map[string][][]string        // table -> each index's columns (with the table key)

	mu                   sync.Mutex
	commits, muts, bytes int64
}

// newCommitCounter reads the schema of the database the client opens.
func newCommitCounter(tb testing.TB, client *spanner.Client) *commitCounter {
	tb.Helper()
	c := &commitCounter{client: client, types: map[string]map[string]string{}, indexes: map[string][][]string{}}
	ctx := context.Background()
	keys := map[string][]string{}
	err := client.Single().Query(ctx, spanner.Statement{SQL: `SELECT c.TABLE_NAME, c.COLUMN_NAME, c.SPANNER_TYPE, IFNULL(i.ORDINAL_POSITION, 0)
		FROM INFORMATION_SCHEMA.COLUMNS c LEFT JOIN INFORMATION_SCHEMA.INDEX_COLUMNS i
		ON i.TABLE_NAME = c.TABLE_NAME AND i.COLUMN_NAME = c.COLUMN_NAME AND i.INDEX_NAME = 'PRIMARY_KEY' AND i.TABLE_SCHEMA = ''
		WHERE c.TABLE_SCHEMA = '' ORDER BY c.TABLE_NAME, 4`}).Do(func(r *spanner.Row) error {
		var table, column, typ string
		var keyPos int64
		if err := r.Columns(&table, &column, &typ, &keyPos); err != nil {
			return err
		}
		if c.types[table] == nil {
			c.types[table] = map[string]string{}
		}
		c.types[table][column] = typ
		if keyPos > 0 {
			keys[table] = append(keys[table], column)
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	index := map[[2]string][]string{}
	err = client.Single().Query(ctx, spanner.Statement{SQL: `SELECT TABLE_NAME, INDEX_NAME, COLUMN_NAME FROM INFORMATION_SCHEMA.INDEX_COLUMNS
		WHERE TABLE_SCHEMA = '' AND INDEX_NAME != 'PRIMARY_KEY' ORDER BY TABLE_NAME, INDEX_NAME`}).Do(func(r *spanner.Row) error {
		var table, name, column string
		if err := r.Columns(&table, &name, &column); err != nil {
			return err
		}
		k := [2]string{table, name}
		index[k] = append(index[k], column)
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	for k, cols := range index {
		for _, key := range keys[k[0]] {
			if !contains(cols, key) {
				cols = append(cols, key)
			}
		}
		c.indexes[k[0]] = append(c.indexes[k[0]], cols)
	}
	return c
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// valueBytes is the logical size of a value of type typ.
func valueBytes(typ string, v *structpb.Value) int64 {
	switch k := v.Kind.(type) {
	case *structpb.Value_NullValue:
		return 0
	case *structpb.Value_ListValue:
		elem := typ
		if len(typ) > 7 && typ[:6] == "ARRAY<" {
			elem = typ[6 : len(typ)-1]
		}
		var n int64
		for _, e := range k.ListValue.Values {
			n += valueBytes(elem, e)
		}
		return n
	case *structpb.Value_BoolValue:
		return 1
	case *structpb.Value_StringValue:
		switch {
		case typ == "INT64" || typ == "FLOAT64":
			return 8
		case typ == "TIMESTAMP":
			return 12
		case len(typ) >= 5 && typ[:5] == "BYTES":
			b, _ := base64.StdEncoding.DecodeString(k.StringValue)
			return int64(len(b))
		}
		return int64(len(k.StringValue))
	}
	return 8 // FLOAT64 as a number
}

// count tallies a commit.
func (c *commitCounter) count(req *spannerpb.CommitRequest) {
	var muts, bytes int64
	for _, m := range req.Mutations {
		var w *spannerpb.Mutation_Write
		insert := false
		switch op := m.Operation.(type) {
		case *spannerpb.Mutation_Delete_:
			muts += int64(len(op.Delete.KeySet.Keys) + len(op.Delete.KeySet.Ranges))
			continue
		case *spannerpb.Mutation_Insert:
			w, insert = op.Insert, true
		case *spannerpb.Mutation_InsertOrUpdate:
			w, insert = op.InsertOrUpdate, true
		case *spannerpb.Mutation_Replace:
			w, insert = op.Replace, true
		case *spannerpb.Mutation_Update:
			w = op.Update
		}
		types := c.types[w.Table]
		for _, row := range w.Values {
			vals := map[string]int64{}
			for i, col := range w.Columns {
				vals[col] = valueBytes(types[col], row.Values[i])
				bytes += vals[col]
			}
			muts += int64(len(w.Columns))
			for _, idx := range c.indexes[w.Table] {
				touched := insert
				for _, col := range idx {
					if _, ok := vals[col]; ok && !touched {
						touched = true
					}
				}
				if !touched {
					continue
				}
				muts += int64(len(idx))
				for _, col := range idx {
					bytes += vals[col]
				}
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.commits++
	c.muts += muts
	c.bytes += bytes
}

// take returns the counts since the last take.
func (c *commitCounter) take() (commits, muts, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	commits, muts, bytes = c.commits, c.muts, c.bytes
	c.commits, c.muts, c.bytes = 0, 0, 0
	return commits, muts, bytes
}

func (c *commitCounter) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprintf("%d commits, %d mutations, %d bytes", c.commits, c.muts, c.bytes)
}
