package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	experimentsv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/experiments/v1"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"

	"github.com/tbhub/tbhub/uploader/internal/client"
	"github.com/tbhub/tbhub/uploader/internal/eventfile"
	"github.com/tbhub/tbhub/uploader/internal/logdir"
	"github.com/tbhub/tbhub/uploader/internal/upload"
	"github.com/tbhub/tbhub/uploader/internal/verify"
)

func init() {
	commands["verify"] = command{"check that the server holds exactly what the logdir holds: --logdir DIR --experiment ID", runVerify}
}

const verifySynopsis = `--logdir DIR|gs://BUCKET/PREFIX --experiment ID

Compares the logdir with what the server holds for the experiment: its runs
(runs with no data included) and their start times (the wall time of each
run's first event), then series by series: every step, wall time and value, every tensor, and every blob's size
and CRC32C (each blob is downloaded). The logdir is read as 'tbup inspect'
reads it (TensorBoard's migration rules; the last point written at a step
wins) and filtered as 'tbup upload' filters it (the server's plugins and size
limits). Each difference is printed on its own line (the first 200), then a
summary.

Exit status: 0 identical, 1 a difference or an error, 2 a usage error.`

// ErrDifferent is returned when verify found a difference; every one was
// printed.
var ErrDifferent = errors.New("the experiment differs from the logdir")

func runVerify(ctx context.Context, env Env, args []string) error {
	fs := newFlagSet(env, "verify", verifySynopsis)
	var sf serverFlags
	sf.register(fs)
	dir := fs.String("logdir", "", "the log directory that was uploaded: a local path or gs://bucket/prefix (required)")
	eid := fs.String("experiment", "", "the experiment it was uploaded to (required)")
	maxRecord := fs.Int("max-record-size", eventfile.DefaultMaxRecordSize, "largest event record read, in bytes, as for upload")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *dir == "" || *eid == "" {
		return missing(env, fs, "--logdir and --experiment are required")
	}
	src, err := logdir.Open(ctx, *dir)
	if err != nil {
		return err
	}
	c, err := sf.connect(ctx, env, nil)
	if err != nil {
		return err
	}
	defer c.conn.Close()
	return verifyExperiment(ctx, env, env.Stdout, c, src, *eid, nil, *maxRecord)
}

// verifyExperiment compares src with experiment eid, printing each
// difference and a summary to out; ErrDifferent if anything differs.
// wanted, if non-empty, restricts the plugins compared, as --plugins
// restricts an upload.
func verifyExperiment(ctx context.Context, env Env, out io.Writer, c *connection, src logdir.Source, eid string, wanted []string, maxRecord int) error {
	plugins := map[string]bool{}
	for _, p := range c.info.AllowedPlugins {
		if len(wanted) == 0 || contains(wanted, p) {
			plugins[p] = true
		}
	}
	local, err := verify.Read(ctx, src, verify.Options{
		Plugins:            plugins,
		MaxTensorPointSize: c.info.Limits.MaxTensorPointSize,
		MaxBlobSize:        c.info.Limits.MaxBlobSize,
		MaxRecordSize:      maxRecord,
	})
	if err != nil {
		return err
	}
	runs, err := serverRuns(ctx, experimentsv1.NewExperimentServiceClient(c.conn), eid)
	if err != nil {
		return fmt.Errorf("experiment %s: %s", eid, client.Describe(err))
	}
	const maxShown = 200
	res, err := verify.Compare(ctx, local, runs, servicepb.NewTensorBoardExporterServiceClient(c.conn), eid, func(line string) {
		fmt.Fprintln(out, line)
	}, maxShown)
	if err != nil {
		return err
	}
	if res.OverLimit > 0 {
		fmt.Fprintf(env.Stderr, "Not compared: %s of the logdir over the server's size limits, which an upload skips.\n", upload.Plural(int64(res.OverLimit), "point or blob", "points or blobs"))
	}
	if res.Differences > 0 {
		if res.Differences > maxShown {
			fmt.Fprintf(out, "... and %d more\n", res.Differences-maxShown)
		}
		return fmt.Errorf("%w: %s over %s compared", ErrDifferent, upload.Plural(int64(res.Differences), "difference", "differences"), compared(res))
	}
	fmt.Fprintf(out, "Identical: %s of %s are on the server as in the logdir.\n", compared(res), src)
	return nil
}

// runPageSize is how many runs verify asks for at once.
const runPageSize = 1000

// serverRuns reads the experiment's runs page by page (a server that
// does not page answers them all in its first answer, with no next
// token).
func serverRuns(ctx context.Context, api experimentsv1.ExperimentServiceClient, eid string) ([]*experimentsv1.RunStart, error) {
	var runs []*experimentsv1.RunStart
	token := ""
	for {
		exp, err := api.GetExperiment(ctx, &experimentsv1.GetExperimentRequest{ExperimentId: eid, RunPageSize: runPageSize, RunPageToken: token})
		if err != nil {
			return nil, err
		}
		runs = append(runs, exp.GetRuns()...)
		if token = exp.GetNextRunPageToken(); token == "" {
			return runs, nil
		}
	}
}

// compared says how much verify compared: "2 runs, 1 series, 40 points and 1 blob".
func compared(res *verify.Result) string {
	return fmt.Sprintf("%s, %s, %s and %s", upload.Plural(int64(res.Runs), "run", "runs"), upload.Plural(int64(res.Series), "series", "series"),
		upload.Plural(int64(res.Points), "point", "points"), upload.Plural(int64(res.Blobs), "blob", "blobs"))
}
