package upload

import (
	"context"
	"errors"
	"fmt"
	"io"

	"google.golang.org/protobuf/proto"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"

	"github.com/tbhub/tbhub/uploader/internal/event"
	"github.com/tbhub/tbhub/uploader/internal/eventfile"
	"github.com/tbhub/tbhub/uploader/internal/logdir"
	"github.com/tbhub/tbhub/uploader/internal/migrate"
	"github.com/tbhub/tbhub/uploader/internal/state"
)

// Reading: one goroutine reads event files in order, from where the ledger says,
// migrates their values into points, and routes each point to the batch (scalars,
// tensors) or the held blob sequences.

// restore rebuilds each run's series table from the state, so files read later are
// migrated against the same first values as before.
func (u *Uploader) restore() {
	for name, r := range u.cfg.State.Runs {
		mr := migrate.NewRun()
		for tag, s := range r.Series {
			var md tbpb.SummaryMetadata
			_ = proto.Unmarshal(s.Metadata, &md) // we wrote it; plugin and class are kept apart anyway
			mr.Restore(tag, migrate.Metadata{
				PluginName:    s.Plugin,
				PluginContent: md.GetPluginData().GetContent(),
				DisplayName:   md.GetDisplayName(),
				Description:   md.GetSummaryDescription(),
				DataClass:     migrate.DataClass(s.Class),
			})
		}
		u.runs[name] = mr
	}
}

// pass reads every event file once from its committed offset.
func (u *Uploader) pass(ctx context.Context) error {
	runs, err := u.cfg.Source.Scan(ctx)
	if err != nil {
		return err
	}
	u.prog.setRuns(len(runs))
	u.measure(runs)
	u.declareRuns(ctx, runs)
	var ev event.Event
	var buf []byte
	for _, run := range runs {
		mr := u.runs[run.Name]
		if mr == nil {
			mr = migrate.NewRun()
			u.runs[run.Name] = mr
		}
		for _, f := range run.Files {
			if ctx.Err() != nil || u.send.err() != nil {
				return ctx.Err()
			}
			buf, err = u.readFile(ctx, run.Name, f, mr, &ev, buf)
			if err != nil {
				return err
			}
		}
		u.sendHeld() // a run's rewrites happen within its files
	}
	u.reportDamage(ctx)
	return nil
}

// measure tells the progress how many bytes of event files runs hold and
// how far into them reading is (a file that cannot be read further counts
// as read), from the sizes the scan listed.
func (u *Uploader) measure(runs []logdir.Run) {
	var total, done int64
	known := true
	for _, run := range runs {
		for _, f := range run.Files {
			at := u.ledger.readOffset(fileKey{run.Name, f.Name})
			switch {
			case f.Size < 0:
				known = false
				done += at.Offset
			case at.Stopped != "":
				total += f.Size
				done += f.Size
			default:
				total += f.Size
				done += min(at.Offset, f.Size)
			}
		}
	}
	u.prog.scanned(total, done, known)
}

// readFile reads one file from where the last pass stopped.
func (u *Uploader) readFile(ctx context.Context, run string, f logdir.File, mr *migrate.Run, ev *event.Event, buf []byte) ([]byte, error) {
	key := fileKey{run, f.Name}
	start := u.ledger.readOffset(key)
	if start.Stopped != "" {
		u.damage.stopped(key) // by this process or, per the state file, an earlier one
		return buf, nil
	}
	if f.Size >= 0 && f.Size <= start.Offset {
		return buf, nil // nothing new
	}
	rc, err := u.cfg.Source.Open(ctx, f.Path, start.Offset)
	if err != nil {
		u.prog.warn("cannot read %s/%s: %v", run, f.Name, err)
		u.prog.Unreadable.Add(1)
		return buf, nil
	}
	defer rc.Close()
	defer u.notePosition() // the file's position joins the current segment
	rd := eventfile.NewReader(rc, start.Offset, eventfile.WithMaxRecordSize(u.cfg.MaxRecordSize), eventfile.WithBuffer(buf))
	pos := start.Offset
	advance := func(next int64) { // past a record, read or skipped
		u.prog.read(next - pos)
		pos = next
		u.advance(key, next)
	}
	emit := func(s *migrate.Series, p *migrate.Point) { u.point(run, s, p) }
	for {
		if ctx.Err() != nil {
			return rd.Buffer(), nil
		}
		rec, err := rd.Next()
		switch {
		case err == nil:
		case err == io.EOF:
			return rd.Buffer(), nil
		case errors.Is(err, eventfile.ErrTruncated):
			// Not written yet: the next pass reads it once it is whole.
			if u.cfg.OneShot {
				u.prog.warn("%s/%s ends with an incomplete record at byte %d; it is sent once complete", run, f.Name, rec.Offset)
				u.damage.stopped(key) // this upload ends without it
			}
			return rd.Buffer(), nil
		case errors.Is(err, eventfile.ErrBadDataCRC), errors.Is(err, eventfile.ErrTooLarge):
			u.prog.warn("%s/%s: skipped the record at byte %d: %v", run, f.Name, rec.Offset, err)
			u.damage.skipped(key, 1)
			advance(rec.Next)
			u.readSkipped++ // the state gets it with the position past it
			continue
		case errors.Is(err, eventfile.ErrBadLengthCRC):
			u.stop(key, rec.Offset, fmt.Sprintf("corrupt record length at byte %d; the rest of the file cannot be read", rec.Offset))
			return rd.Buffer(), nil
		default:
			u.prog.warn("reading %s/%s at byte %d: %v", run, f.Name, rec.Offset, err)
			return rd.Buffer(), nil
		}
		if err := event.Decode(rec.Data, ev); err != nil {
			u.stop(key, rec.Offset, fmt.Sprintf("unparsable event at byte %d (%v)", rec.Offset, err))
			return rd.Buffer(), nil
		}
		u.prog.Records.Add(1)
		mr.Add(ev, emit)
		advance(rec.Next)
	}
}

// advance notes the reader's position, past every point of the records before it;
// it reaches the ledger when the file ends or a segment is sealed, not per record.
func (u *Uploader) advance(key fileKey, off int64) {
	u.readKey, u.readPos, u.readMoved = key, off, true
}

// notePosition gives the reader's position to the current segment. Every point
// read before it must have joined that segment or an earlier one.
func (u *Uploader) notePosition() {
	if u.readMoved {
		u.ledger.reachedSkipping(u.readKey, u.readPos, u.readSkipped)
		u.readMoved, u.readSkipped = false, 0
	}
}

func (u *Uploader) stop(key fileKey, off int64, why string) {
	u.prog.warn("%s/%s: %s", key.run, key.file, why)
	u.readMoved = false // the stop records this file's final position
	u.ledger.stopSkipping(key, off, why, u.readSkipped)
	u.readSkipped = 0
	u.damage.stopped(key)
}

// seriesState is what the uploader keeps per series it has seen.
type seriesState struct {
	allowed       bool // the server accepts its plugin and its class is known
	md            *tbpb.SummaryMetadata
	lastStep      int64 // largest step queued
	seen          bool
	droppedWarned bool
}

// point routes one migrated point.
func (u *Uploader) point(run string, s *migrate.Series, p *migrate.Point) {
	st := u.series[s]
	if st == nil {
		st = u.newSeries(run, s)
	}
	if s.Dropped > 0 && !st.droppedWarned {
		st.droppedWarned = true
		u.prog.warn("%s/%s: values naming another plugin than %q are dropped, as TensorBoard does", run, s.Tag, s.Plugin())
	}
	if !st.allowed {
		return
	}
	// A step written again (a job restarted from a checkpoint) must not overtake the
	// earlier value: the later one has to win.
	rewrite := st.seen && p.Step <= st.lastStep
	if !rewrite {
		st.lastStep, st.seen = p.Step, true
	}
	switch s.Class() {
	case migrate.ClassScalar:
		u.addScalar(run, s, p, rewrite)
	case migrate.ClassTensor:
		u.addTensor(run, s, p, rewrite)
	case migrate.ClassBlobSequence:
		job := newBlobJob(run, s, p, st.md, u.cfg.Limits.MaxBlobSize, u.prog)
		job.rewrite = rewrite
		if u.held.hold(job) {
			u.sendHeld()
		}
	}
}

// newSeries decides whether a series is uploaded and, if so, records it in the
// current segment when the state does not know it yet.
func (u *Uploader) newSeries(run string, s *migrate.Series) *seriesState {
	st := &seriesState{allowed: s.Class() != migrate.ClassUnknown && u.cfg.Plugins[s.Plugin()]}
	u.series[s] = st
	if !st.allowed {
		u.prog.Skipped.Add(1)
		if u.prog.Verbose {
			u.prog.warn("%s/%s: plugin %q is not uploaded", run, s.Tag, s.Plugin())
		}
		return st
	}
	raw := s.Metadata.Marshal()
	st.md = &tbpb.SummaryMetadata{}
	if err := proto.Unmarshal(raw, st.md); err != nil {
		panic(fmt.Sprintf("metadata we serialized does not parse: %v", err))
	}
	u.ledger.newSeries(run, s.Tag, &state.Series{Plugin: s.Plugin(), Class: uint8(s.Class()), Metadata: raw})
	return st
}

func (u *Uploader) addScalar(run string, s *migrate.Series, p *migrate.Point, rewrite bool) {
	v, ok := migrate.ScalarValue(p)
	if !ok {
		u.prog.Invalid.Add(1)
		return
	}
	pt, cost := scalarPoint(p, v)
	if !u.batch.scalarFits(run, s.Tag, cost) {
		u.sendScalars()
	}
	if rewrite {
		u.ledger.waitSeries(s)
	}
	u.batch.addScalar(run, s, u.series[s].md, pt, cost)
}

func (u *Uploader) addTensor(run string, s *migrate.Series, p *migrate.Point, rewrite bool) {
	raw := migrate.AppendTensorProto(nil, p)
	if int64(len(raw)) > u.cfg.Limits.MaxTensorPointSize && u.cfg.Limits.MaxTensorPointSize >= 0 {
		u.prog.warn("%s/%s step %d: tensor of %d bytes exceeds the server's limit of %d bytes; skipped", run, s.Tag, p.Step, len(raw), u.cfg.Limits.MaxTensorPointSize)
		u.prog.TooLarge.Add(1)
		return
	}
	tp := &tbpb.TensorProto{}
	if err := proto.Unmarshal(raw, tp); err != nil {
		u.prog.warn("%s/%s step %d: unreadable tensor (%v); skipped", run, s.Tag, p.Step, err)
		return
	}
	pt := &servicepb.TensorPoint{Step: p.Step, WallTime: timestamp(p.WallTime), Value: tp}
	cost := fieldCost(proto.Size(pt))
	if !u.batch.tensorFits(run, s.Tag, cost) {
		u.sendTensors()
	}
	if rewrite {
		u.ledger.waitSeries(s)
	}
	u.batch.addTensor(run, s, u.series[s].md, pt, cost)
}
