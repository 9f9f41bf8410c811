package upload

import (
	"context"
	"errors"
	"math"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	experimentsv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/experiments/v1"
	"github.com/tbhub/tbhub/uploader/internal/client"
	"github.com/tbhub/tbhub/uploader/internal/event"
	"github.com/tbhub/tbhub/uploader/internal/eventfile"
	"github.com/tbhub/tbhub/uploader/internal/logdir"
)

// maxRunsPerPut is how many runs one PutRuns request carries (the server
// takes at most 1000).
const maxRunsPerPut = 500

// runStarts tells the server about each run of the logdir and its start
// time (ExperimentService.PutRuns), so that a run whose files hold no data
// yet is listed as TensorBoard lists it, and every run starts when
// TensorBoard says: at the wall time of its first event, which is the
// file_version event the writer puts first and which carries no point.
// Used by the reader goroutine only.
type runStarts struct {
	// declared is, per run, the start time the server was given by this
	// process (0: the run was created without one).
	declared map[string]float64
	// off is set once the server has no PutRuns (an older tbhub): the
	// points are sent all the same.
	off bool
}

// declareRuns sends the runs of the scan that the server has not been told
// about yet, or whose first event has appeared since. Failures are warnings:
// the data is sent without them, and the next pass tries again.
func (u *Uploader) declareRuns(ctx context.Context, runs []logdir.Run) {
	if u.cfg.Experiments == nil || u.starts.off {
		return
	}
	if u.starts.declared == nil {
		u.starts.declared = map[string]float64{}
	}
	var todo []*experimentsv1.RunStart
	for _, r := range runs {
		prev, known := u.starts.declared[r.Name]
		if known && prev != 0 {
			continue // the first event of a run does not change
		}
		start := firstEventTime(ctx, u.cfg.Source, r, u.cfg.MaxRecordSize)
		if known && start == 0 {
			continue
		}
		todo = append(todo, &experimentsv1.RunStart{Name: r.Name, StartTime: start})
	}
	for len(todo) > 0 {
		n := min(len(todo), maxRunsPerPut)
		batch := todo[:n]
		todo = todo[n:]
		err := u.send.call(ctx, func(ctx context.Context) error {
			_, err := u.cfg.Experiments.PutRuns(ctx, &experimentsv1.PutRunsRequest{ExperimentId: u.cfg.ExperimentID, Runs: batch})
			return err
		})
		switch {
		case err == nil:
			for _, r := range batch {
				u.starts.declared[r.GetName()] = r.GetStartTime()
			}
		case status.Code(err) == codes.Unimplemented:
			u.prog.warn("the server does not record run start times or runs without data (it predates PutRuns); sending the data only")
			u.starts.off = true
			return
		default:
			if ctx.Err() == nil {
				u.prog.warn("recording the runs and their start times: %s; trying again on the next pass", client.Describe(err))
			}
			return
		}
	}
}

// firstEventTime is TensorBoard's start time of run: the wall time of the
// first event of its files, read in name order (an empty file has none, and
// a record that cannot be read is passed over as TensorBoard's reader
// does); 0 if no file holds an event yet.
func firstEventTime(ctx context.Context, src logdir.Source, run logdir.Run, maxRecord int) float64 {
	var ev event.Event
	for _, f := range run.Files {
		if f.Size == 0 {
			continue
		}
		wall, ok := firstEventTimeOf(ctx, src, f.Path, maxRecord, &ev)
		if ok {
			return wall
		}
	}
	return 0
}

// firstEventTimeOf reads path up to its first event that decodes.
func firstEventTimeOf(ctx context.Context, src logdir.Source, path string, maxRecord int, ev *event.Event) (float64, bool) {
	rc, err := src.Open(ctx, path, 0)
	if err != nil {
		return 0, false // the pass that reads the file reports it
	}
	defer rc.Close()
	rd := eventfile.NewReader(rc, 0, eventfile.WithMaxRecordSize(maxRecord))
	for ctx.Err() == nil {
		rec, err := rd.Next()
		if errors.Is(err, eventfile.ErrBadDataCRC) || errors.Is(err, eventfile.ErrTooLarge) {
			continue
		}
		if err != nil {
			return 0, false // the end, or a record not written yet or damaged
		}
		if event.Decode(rec.Data, ev) != nil {
			return 0, false
		}
		if math.IsNaN(ev.WallTime) || math.IsInf(ev.WallTime, 0) {
			return 0, true // the first event tells no time
		}
		return ev.WallTime, true
	}
	return 0, false
}
