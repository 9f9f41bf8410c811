package cli

import (
	"context"

	"github.com/tbhub/tbhub/uploader/internal/eventfile"
	"github.com/tbhub/tbhub/uploader/internal/inspect"
	"github.com/tbhub/tbhub/uploader/internal/logdir"
)

func runInspect(ctx context.Context, env Env, args []string) error {
	fs := newFlagSet(env, "inspect", "--logdir DIR|gs://BUCKET/PREFIX [--json]")
	dir := fs.String("logdir", "", "the log directory: a local path or gs://bucket/prefix (required)")
	asJSON := fs.Bool("json", false, "print a JSON document (the keys of the corpus's EXPECTED.json) instead of a table")
	maxRecord := fs.Int("max-record-size", eventfile.DefaultMaxRecordSize, "largest event record read, in bytes; larger ones are reported and skipped")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *dir == "" {
		return missing(env, fs, "--logdir is required")
	}
	src, err := logdir.Open(ctx, *dir)
	if err != nil {
		return err
	}
	rep, err := inspect.Inspect(ctx, src, inspect.Options{MaxRecordSize: *maxRecord})
	if err != nil {
		return err
	}
	if *asJSON {
		return rep.WriteJSON(env.Stdout)
	}
	return rep.WriteTable(env.Stdout)
}
