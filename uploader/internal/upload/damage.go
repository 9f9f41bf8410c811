package upload

import (
	"context"
	"slices"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	experimentsv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/experiments/v1"
	"github.com/tbhub/tbhub/uploader/internal/client"
)

// maxDamagedFiles is how many damaged files a report names (the server
// takes at most 100); the others are counted.
const maxDamagedFiles = 100

// damage is what the reader found damaged in the logdir's event files:
// per file, the records it skipped (a bad data CRC, too large) and whether
// it stopped reading the file (a corrupt length, an unparsable event, a
// one-shot upload's truncated last record), which counts as one record.
// The server is told (reportDamage) so that the experiment page can say
// it too. Used by the reader goroutine only.
type damage struct {
	files map[fileKey]*fileDamage
	// reported is the last report the server acknowledged.
	reported *experimentsv1.DamagedRecords
}

type fileDamage struct {
	skipped int64
	stopped bool
}

func (d *damage) of(k fileKey) *fileDamage {
	if d.files == nil {
		d.files = map[fileKey]*fileDamage{}
	}
	f := d.files[k]
	if f == nil {
		f = &fileDamage{}
		d.files[k] = f
	}
	return f
}

// skipped notes n records of k passed over.
func (d *damage) skipped(k fileKey, n int64) { d.of(k).skipped += n }

// stopped notes that reading k stopped at a damaged record; once per file,
// however many passes find it stopped (the state file keeps it so).
func (d *damage) stopped(k fileKey) { d.of(k).stopped = true }

// report is the total so far: records, files, and the first
// maxDamagedFiles files in name order ("RUN/FILE").
func (d *damage) report() *experimentsv1.DamagedRecords {
	r := &experimentsv1.DamagedRecords{NumFiles: int64(len(d.files))}
	names := make([]string, 0, len(d.files))
	for k, f := range d.files {
		r.Records += f.skipped
		if f.stopped {
			r.Records++
		}
		names = append(names, k.run+"/"+k.file)
	}
	slices.Sort(names)
	r.Files = names[:min(len(names), maxDamagedFiles)]
	return r
}

// reportDamage tells the server what is damaged when that changed since
// the last report it acknowledged (ExperimentService.PutRuns, with the
// start times). A failure is a warning; the next pass tries again.
func (u *Uploader) reportDamage(ctx context.Context) {
	if u.cfg.Experiments == nil || u.starts.off || len(u.damage.files) == 0 {
		return
	}
	r := u.damage.report()
	if old := u.damage.reported; old != nil && old.GetRecords() == r.GetRecords() && old.GetNumFiles() == r.GetNumFiles() && slices.Equal(old.GetFiles(), r.GetFiles()) {
		return
	}
	err := u.send.call(ctx, func(ctx context.Context) error {
		_, err := u.cfg.Experiments.PutRuns(ctx, &experimentsv1.PutRunsRequest{ExperimentId: u.cfg.ExperimentID, Damaged: r})
		return err
	})
	switch {
	case err == nil:
		u.damage.reported = r
	case status.Code(err) == codes.Unimplemented:
		u.starts.off = true // an older server: no PutRuns at all
	case ctx.Err() == nil:
		u.prog.warn("telling the server of the damaged records: %s; trying again on the next pass", client.Describe(err))
	}
}
