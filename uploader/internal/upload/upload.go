// Package upload sends a logdir to a tbhub write service and keeps doing so while
// the logdir grows.
//
// One goroutine reads event files in order (runs by name, files by name, each from
// the offset the state file records), migrates their values into points, and packs
// them into WriteScalar and WriteTensor requests sized to the server's limits; blob
// sequences (images, audio, graphs) become GetOrCreateBlobSequence calls and one
// WriteBlob stream per blob. Several requests are in flight at once while reading
// goes on.
//
// The read position advances in segments. A segment is the set of requests made from
// a stretch of records; once the server has acknowledged every request of a segment
// and of all segments before it, the segment's end offsets and series metadata are
// written to the state file. The server's acknowledgement is the only proof that data
// landed: after a crash, tbup re-reads from the last committed offsets and re-sends
// at most the unacknowledged segments, which the server stores idempotently (points
// are keyed by step, blobs by index), so nothing is lost and nothing is duplicated.
package upload

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"

	"github.com/tbhub/tbhub/uploader/internal/client"
	"github.com/tbhub/tbhub/uploader/internal/event"
	"github.com/tbhub/tbhub/uploader/internal/eventfile"
	"github.com/tbhub/tbhub/uploader/internal/logdir"
	"github.com/tbhub/tbhub/uploader/internal/migrate"
	"github.com/tbhub/tbhub/uploader/internal/state"
)

// Config is what an upload needs.
type Config struct {
	Source       logdir.Source
	Writer       servicepb.TensorBoardWriterServiceClient // nil for a dry run
	ExperimentID string
	Limits       client.Limits
	// Plugins are the plugins to upload; a series of any other plugin is skipped.
	Plugins map[string]bool
	State   *state.State
	// SaveState persists the state; nil for a dry run.
	SaveState func(*state.State) error
	OneShot   bool
	Poll      time.Duration // how often a continuous upload rescans the logdir
	Retry     client.Retry
	InFlight  int // requests in flight at once
	// MaxRecordSize caps one event record (eventfile.DefaultMaxRecordSize if 0).
	MaxRecordSize int
	Progress      *Progress
	// Crash, if set, is called at each CrashPoint; tests arm it to kill the process
	// there. It must return, or never return (the process is gone).
	Crash func(CrashPoint)
}

// segmentBytes is how much request payload a segment gathers before it is sealed.
const segmentBytes = 16 << 20

// maxQueuedBytes bounds request and blob bytes held in memory, waiting or in flight.
const maxQueuedBytes = 96 << 20

// ErrNotSent is wrapped by the error an upload ends with when data could not be sent.
var ErrNotSent = errors.New("upload incomplete")

// Uploader runs one upload.
type Uploader struct {
	cfg  Config
	prog *Progress

	sendCtx  context.Context
	failSend context.CancelCauseFunc

	mu       sync.Mutex
	segments []*segment // unsealed or uncommitted, oldest first
	cur      *segment
	queued   int64 // bytes held by pending requests
	space    *sync.Cond
	inflight chan struct{}
	wg       sync.WaitGroup

	runs   map[string]*migrate.Run
	series map[*migrate.Series]*seriesState
	// inflight counts, per series, submitted requests holding its points that the
	// server has not acknowledged yet (guarded by mu).
	inflightSeries map[*migrate.Series]int

	scalarReq    *servicepb.WriteScalarRequest
	scalarSize   int
	scalarPoints int
	scalarSeries []*migrate.Series // the series the pending scalar request holds
	scalarTags   map[*migrate.Series]*servicepb.WriteScalarRequest_Tag
	tensorReq    *servicepb.WriteTensorRequest
	tensorSize   int
	tensorPoints int
	tensorSeries []*migrate.Series

	// The reader's position not yet recorded in a segment (reader goroutine only).
	readKey   fileKey
	readPos   int64
	readMoved bool

	// Blob sequences read but not yet submitted (see addBlobSequence).
	held      []heldBlob
	heldIndex map[blobKey]int
	heldBytes int
	sealing   bool // submit must not seal while a seal drains what is pending

	lastScalar, lastTensor, lastBlob time.Time
	limitMu                          sync.Mutex
}

// segment is a stretch of records whose requests are committed together.
type segment struct {
	pending int                                 // requests not yet acknowledged
	sealed  bool                                // no more requests will join
	bytes   int                                 // request payload gathered
	offsets map[fileKey]int64                   // end offsets reached in this segment
	stopped map[fileKey]string                  // files that cannot be read further
	series  map[string]map[string]*state.Series // series first seen in this segment
}

type fileKey struct{ run, file string }

// New prepares an upload.
func New(cfg Config) *Uploader {
	if cfg.InFlight <= 0 {
		cfg.InFlight = 4
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 5 * time.Second
	}
	if cfg.MaxRecordSize <= 0 {
		cfg.MaxRecordSize = eventfile.DefaultMaxRecordSize
	}
	if cfg.Progress == nil {
		cfg.Progress = &Progress{}
	}
	u := &Uploader{
		cfg:            cfg,
		prog:           cfg.Progress,
		inflight:       make(chan struct{}, cfg.InFlight),
		runs:           map[string]*migrate.Run{},
		series:         map[*migrate.Series]*seriesState{},
		inflightSeries: map[*migrate.Series]int{},
		heldIndex:      map[blobKey]int{},
	}
	u.space = sync.NewCond(&u.mu)
	u.prog.ExperimentID = cfg.ExperimentID
	return u
}

// Run uploads until the logdir is done (one-shot) or ctx is cancelled (continuous:
// Ctrl-C). Either way it stops reading, sends what it has read, waits for the
// server's acknowledgements and saves the state before it returns.
func (u *Uploader) Run(ctx context.Context) error {
	// Sending outlives an interrupt so that what was read is flushed; it stops only
	// on a permanent failure or if flushing takes too long.
	sendCtx, failSend := context.WithCancelCause(context.WithoutCancel(ctx))
	defer failSend(nil)
	u.sendCtx, u.failSend = sendCtx, failSend
	u.restore()
	var err error
	for {
		u.prog.setActivity("reading")
		err = u.pass(ctx)
		u.flush()
		u.prog.setActivity("sending")
		u.waitSent(ctx)
		if err != nil || u.sendErr() != nil || u.cfg.OneShot || ctx.Err() != nil {
			break
		}
		u.prog.setActivity("watching the logdir")
		select {
		case <-ctx.Done():
		case <-time.After(u.cfg.Poll):
		}
		if ctx.Err() != nil {
			break
		}
	}
	if serr := u.sendErr(); serr != nil {
		return fmt.Errorf("%w: %s; %s. Run the same command again to send the rest", ErrNotSent, client.Describe(serr), u.unsent())
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	if n := u.prog.Unreadable.Load(); n > 0 && u.cfg.OneShot {
		return fmt.Errorf("%w: %d event file(s) could not be read (see the warnings above); everything else was sent", ErrNotSent, n)
	}
	if n := u.prog.Rejected.Load(); n > 0 {
		return fmt.Errorf("%w: the server rejected %d point(s) or request(s), listed in the warnings above; everything else was stored", ErrNotSent, n)
	}
	return nil
}

func (u *Uploader) sendErr() error {
	if u.sendCtx.Err() == nil {
		return nil
	}
	return context.Cause(u.sendCtx)
}

// unsent describes what the state does not yet cover.
func (u *Uploader) unsent() string {
	return fmt.Sprintf("%d request(s) were not acknowledged; %s", u.pendingRequests(), u.prog.summary())
}

// pendingRequests counts submitted requests not yet acknowledged.
func (u *Uploader) pendingRequests() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	n := 0
	for _, s := range u.segments {
		n += s.pending
	}
	return n
}

// waitSent waits for every request to be acknowledged (or to fail), then commits.
// An interrupted upload gets a minute to flush.
func (u *Uploader) waitSent(ctx context.Context) {
	done := make(chan struct{})
	go func() { u.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		select {
		case <-done:
		case <-time.After(time.Minute):
			u.failSend(errors.New("interrupted before the server acknowledged everything"))
			<-done
		}
	}
	u.mu.Lock()
	u.commitLocked()
	u.mu.Unlock()
}

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
	var ev event.Event
	var buf []byte
	for _, run := range runs {
		mr := u.runs[run.Name]
		if mr == nil {
			mr = migrate.NewRun()
			u.runs[run.Name] = mr
		}
		for _, f := range run.Files {
			if ctx.Err() != nil || u.sendErr() != nil {
				return ctx.Err()
			}
			buf, err = u.readFile(ctx, run.Name, f, mr, &ev, buf)
			if err != nil {
				return err
			}
		}
		u.sendHeldBlobs() // a run's rewrites happen within its files
	}
	return nil
}

// committedFile is the state's record of a file, as of the last commit.
func (u *Uploader) committedFile(run, file string) state.File {
	u.mu.Lock()
	defer u.mu.Unlock()
	if r := u.cfg.State.Runs[run]; r != nil {
		if f := r.Files[file]; f != nil {
			return *f
		}
	}
	return state.File{}
}

// readFile reads one file from where the last pass stopped.
func (u *Uploader) readFile(ctx context.Context, run string, f logdir.File, mr *migrate.Run, ev *event.Event, buf []byte) ([]byte, error) {
	key := fileKey{run, f.Name}
	start := u.readOffset(key)
	if start.Stopped != "" {
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
	defer func() { // the file's position joins the current segment
		u.mu.Lock()
		u.notePositionLocked()
		u.mu.Unlock()
	}()
	rd := eventfile.NewReader(rc, start.Offset, eventfile.WithMaxRecordSize(u.cfg.MaxRecordSize), eventfile.WithBuffer(buf))
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
			}
			return rd.Buffer(), nil
		case errors.Is(err, eventfile.ErrBadDataCRC), errors.Is(err, eventfile.ErrTooLarge):
			u.prog.warn("%s/%s: skipped the record at byte %d: %v", run, f.Name, rec.Offset, err)
			u.advance(key, rec.Next)
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
		u.advance(key, rec.Next)
	}
}

// readOffset is where reading resumes: past what earlier segments of this process
// read, or the committed offset.
func (u *Uploader) readOffset(key fileKey) state.File {
	u.mu.Lock()
	for i := len(u.segments) - 1; i >= 0; i-- {
		s := u.segments[i]
		if why, ok := s.stopped[key]; ok {
			u.mu.Unlock()
			return state.File{Stopped: why}
		}
		if off, ok := s.offsets[key]; ok {
			u.mu.Unlock()
			return state.File{Offset: off}
		}
	}
	u.mu.Unlock()
	return u.committedFile(key.run, key.file)
}

func (u *Uploader) segmentLocked() *segment {
	if u.cur == nil {
		u.cur = &segment{offsets: map[fileKey]int64{}, stopped: map[fileKey]string{}, series: map[string]map[string]*state.Series{}}
		u.segments = append(u.segments, u.cur)
	}
	return u.cur
}

// advance notes the reader's position; it reaches the current segment when the file
// ends or the segment is sealed (both on the reader's goroutine), not per record.
func (u *Uploader) advance(key fileKey, off int64) {
	u.readKey, u.readPos, u.readMoved = key, off, true
}

// notePositionLocked records the reader's position in the current segment.
func (u *Uploader) notePositionLocked() {
	if u.readMoved {
		u.segmentLocked().offsets[u.readKey] = u.readPos
		u.readMoved = false
	}
}

func (u *Uploader) stop(key fileKey, off int64, why string) {
	u.prog.warn("%s/%s: %s", key.run, key.file, why)
	u.mu.Lock()
	u.readMoved = false // the stop records this file's final position
	s := u.segmentLocked()
	s.offsets[key] = off
	s.stopped[key] = why
	u.mu.Unlock()
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
		u.addBlobSequence(run, s, p)
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
	u.mu.Lock()
	known := u.cfg.State.Runs[run] != nil && u.cfg.State.Runs[run].Series[s.Tag] != nil
	if !known {
		seg := u.segmentLocked()
		if seg.series[run] == nil {
			seg.series[run] = map[string]*state.Series{}
		}
		seg.series[run][s.Tag] = &state.Series{Plugin: s.Plugin(), Class: uint8(s.Class()), Metadata: raw}
	}
	u.mu.Unlock()
	return st
}

func timestamp(wall float64) *timestamppb.Timestamp {
	switch {
	case math.IsNaN(wall): // a Timestamp cannot say NaN; 0 marks "unknown"
		wall = 0
	case wall >= math.MaxInt64:
		return &timestamppb.Timestamp{Seconds: math.MaxInt64}
	case wall <= math.MinInt64:
		return &timestamppb.Timestamp{Seconds: math.MinInt64}
	}
	sec := int64(math.Floor(wall))
	nanos := int64((wall-float64(sec))*1e9 + 0.5)
	if nanos >= 1e9 {
		sec, nanos = sec+1, nanos-1e9
	}
	return &timestamppb.Timestamp{Seconds: sec, Nanos: int32(nanos)}
}

// scalarPointSize is proto.Size of a ScalarPoint, computed directly: it is on the
// per-point path.
func scalarPointSize(pt *servicepb.ScalarPoint) int {
	n := 9 // value: tag + fixed64
	if pt.Step != 0 {
		n += 1 + protowire.SizeVarint(uint64(pt.Step))
	}
	ts := 0
	if s := pt.WallTime.GetSeconds(); s != 0 {
		ts += 1 + protowire.SizeVarint(uint64(s))
	}
	if ns := pt.WallTime.GetNanos(); ns != 0 {
		ts += 1 + protowire.SizeVarint(uint64(ns))
	}
	return n + 1 + protowire.SizeVarint(uint64(ts)) + ts
}

// Request sizes are tracked as TensorBoard's uploader does: each run, tag and point
// costs its encoded size plus the worst-case tag and length prefix.
func fieldCost(n int) int { return n + 11 }

func (u *Uploader) addScalar(run string, s *migrate.Series, p *migrate.Point, rewrite bool) {
	v, ok := migrate.ScalarValue(p)
	if !ok {
		u.prog.Invalid.Add(1)
		return
	}
	pt := &servicepb.ScalarPoint{Step: p.Step, WallTime: timestamp(p.WallTime), Value: v}
	cost := fieldCost(scalarPointSize(pt))
	if u.scalarReq != nil && u.scalarSize+cost+2*fieldCost(len(run)+len(s.Tag)) > int(u.cfg.Limits.MaxScalarRequestSize) {
		u.sendScalars()
	}
	if rewrite {
		u.waitSeries(s)
	}
	if u.scalarReq == nil {
		u.scalarReq = &servicepb.WriteScalarRequest{ExperimentId: u.cfg.ExperimentID}
		u.scalarSize = fieldCost(len(u.cfg.ExperimentID))
		u.scalarTags = map[*migrate.Series]*servicepb.WriteScalarRequest_Tag{}
	}
	tag := u.scalarTag(run, s)
	tag.Points = append(tag.Points, pt)
	u.scalarSize += cost
	u.scalarPoints++
}

// scalarTag finds or adds (run, tag) at the end of the pending request; metadata goes
// with the first request that names a tag, as the stock uploader sends it.
func (u *Uploader) scalarTag(run string, s *migrate.Series) *servicepb.WriteScalarRequest_Tag {
	if t, ok := u.scalarTags[s]; ok {
		return t
	}
	req := u.scalarReq
	var r *servicepb.WriteScalarRequest_Run
	if n := len(req.Runs); n > 0 && req.Runs[n-1].Name == run {
		r = req.Runs[n-1]
	} else {
		r = &servicepb.WriteScalarRequest_Run{Name: run}
		req.Runs = append(req.Runs, r)
		u.scalarSize += fieldCost(len(run))
	}
	t := &servicepb.WriteScalarRequest_Tag{Name: s.Tag, Metadata: u.series[s].md}
	r.Tags = append(r.Tags, t)
	u.scalarTags[s] = t
	u.scalarSeries = append(u.scalarSeries, s)
	u.scalarSize += fieldCost(len(s.Tag) + proto.Size(t.Metadata))
	return t
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
	if u.tensorReq != nil && u.tensorSize+cost+2*fieldCost(len(run)+len(s.Tag)) > int(u.cfg.Limits.MaxTensorRequestSize) {
		u.sendTensors()
	}
	if rewrite {
		u.waitSeries(s)
	}
	if u.tensorReq == nil {
		u.tensorReq = &servicepb.WriteTensorRequest{ExperimentId: u.cfg.ExperimentID}
		u.tensorSize = fieldCost(len(u.cfg.ExperimentID))
	}
	req := u.tensorReq
	var r *servicepb.WriteTensorRequest_Run
	if n := len(req.Runs); n > 0 && req.Runs[n-1].Name == run {
		r = req.Runs[n-1]
	} else {
		r = &servicepb.WriteTensorRequest_Run{Name: run}
		req.Runs = append(req.Runs, r)
		u.tensorSize += fieldCost(len(run))
	}
	var tag *servicepb.WriteTensorRequest_Tag
	for i := len(r.Tags) - 1; i >= 0 && tag == nil; i-- {
		if r.Tags[i].Name == s.Tag {
			tag = r.Tags[i]
		}
	}
	if tag == nil {
		tag = &servicepb.WriteTensorRequest_Tag{Name: s.Tag, Metadata: u.series[s].md}
		r.Tags = append(r.Tags, tag)
		u.tensorSeries = append(u.tensorSeries, s)
		u.tensorSize += fieldCost(len(s.Tag) + proto.Size(tag.Metadata))
	}
	tag.Points = append(tag.Points, pt)
	u.tensorSize += cost
	u.tensorPoints++
}

// blobJob is one blob-sequence point to upload.
type blobJob struct {
	run, tag string
	step     int64
	wall     float64
	md       *tbpb.SummaryMetadata
	blobs    [][]byte
	skip     []bool // blobs over the size limit: their slots stay empty
	size     int    // bytes of blobs held
}

func (u *Uploader) addBlobSequence(run string, s *migrate.Series, p *migrate.Point) {
	job := &blobJob{run: run, tag: s.Tag, step: p.Step, wall: p.WallTime, md: u.series[s].md}
	size := 0
	migrate.ForEachBlob(s, p, func(b []byte) {
		skip := int64(len(b)) > u.cfg.Limits.MaxBlobSize
		if skip {
			u.prog.warn("%s/%s step %d: blob of %d bytes exceeds the server's limit of %d bytes; skipped", run, s.Tag, p.Step, len(b), u.cfg.Limits.MaxBlobSize)
			u.prog.TooLarge.Add(1)
			b = nil // the slot stays, so later blobs keep their index
		}
		job.blobs = append(job.blobs, append([]byte(nil), b...))
		job.skip = append(job.skip, skip)
		size += len(b)
	})
	job.size = size
	// Blob sequences wait a little before they are sent: a later event at the same
	// step (TF1 writes its graph again, a job restarts) replaces the waiting one, so
	// the last write wins as it does for scalars and tensors.
	key := blobKey{s, p.Step}
	if i, ok := u.heldIndex[key]; ok {
		u.heldBytes += size - u.held[i].job.size
		u.held[i].job = job
	} else {
		u.heldIndex[key] = len(u.held)
		u.held = append(u.held, heldBlob{series: s, job: job})
		u.heldBytes += size
	}
	if u.heldBytes > maxHeldBlobBytes {
		u.sendHeldBlobs()
	}
}

// maxHeldBlobBytes bounds the blob sequences held back for last-write-wins.
const maxHeldBlobBytes = 32 << 20

type blobKey struct {
	series *migrate.Series
	step   int64
}

type heldBlob struct {
	series *migrate.Series
	job    *blobJob
}

// sendHeldBlobs submits the blob sequences held back, in the order they were read.
//
// They leave u.held one at a time: a submit may seal the current segment, which
// records the reader's position (past every held blob) once everything pending
// has joined the segment, so the blobs not yet submitted must still be pending
// then. Taking the whole list out first let a segment's offsets cover blobs sent
// in the next one: after a kill -9 they were never sent (issue 12).
func (u *Uploader) sendHeldBlobs() {
	u.heldIndex = map[blobKey]int{}
	for len(u.held) > 0 {
		h := u.held[0]
		u.held = u.held[1:]
		u.heldBytes -= h.job.size
		job := h.job
		u.submit(job.size, []*migrate.Series{h.series}, func(ctx context.Context) error { return u.sendBlobSequence(ctx, job) })
	}
	u.held, u.heldBytes = nil, 0
}

func (u *Uploader) sendScalars() {
	req, series, n := u.scalarReq, u.scalarSeries, u.scalarPoints
	u.scalarReq, u.scalarSeries, u.scalarPoints = nil, nil, 0
	if req == nil {
		return
	}
	u.sendPoints(req, series, n, u.scalarSize, &u.lastScalar, u.cfg.Limits.MinScalarInterval, &u.prog.Scalars, func(ctx context.Context) error {
		_, err := u.cfg.Writer.WriteScalar(ctx, req)
		return err
	})
}

func (u *Uploader) sendTensors() {
	req, series, n := u.tensorReq, u.tensorSeries, u.tensorPoints
	u.tensorReq, u.tensorSeries, u.tensorPoints = nil, nil, 0
	if req == nil {
		return
	}
	u.sendPoints(req, series, n, u.tensorSize, &u.lastTensor, u.cfg.Limits.MinTensorInterval, &u.prog.Tensors, func(ctx context.Context) error {
		_, err := u.cfg.Writer.WriteTensor(ctx, req)
		return err
	})
}

// sendPoints queues one WriteScalar or WriteTensor request of n points.
func (u *Uploader) sendPoints(req proto.Message, series []*migrate.Series, n, size int, last *time.Time, interval time.Duration, sent *atomic.Int64, write func(ctx context.Context) error) {
	u.submit(size, series, func(ctx context.Context) error {
		u.pace(last, interval)
		if u.cfg.Writer != nil {
			if err := u.call(ctx, write); err != nil && !u.rejected(err) {
				return err
			}
			u.crash(CrashPointsAcked)
		}
		sent.Add(int64(n))
		u.prog.Bytes.Add(int64(size)) // the packed estimate; proto.Size costs a walk of the request
		return nil
	})
}

// rejected reports points the server refused for good (it stores the rest of the
// request) and says whether err was such a refusal. Resending cannot help, so the
// upload goes on and ends with an error that counts them.
func (u *Uploader) rejected(err error) bool {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.InvalidArgument {
		return false
	}
	n := 0
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				u.prog.warn("the server rejected %s", v.GetDescription())
				n++
			}
		}
	}
	if n == 0 {
		u.prog.warn("the server rejected a request: %s", st.Message())
		n = 1
	}
	u.prog.Rejected.Add(int64(n))
	return true
}

// pace keeps requests of one kind at least interval apart, as the server asks.
func (u *Uploader) pace(last *time.Time, interval time.Duration) {
	if interval <= 0 {
		return
	}
	u.limitMu.Lock()
	wait := time.Until(last.Add(interval))
	if wait < 0 {
		wait = 0
	}
	*last = time.Now().Add(wait)
	u.limitMu.Unlock()
	if wait > 0 {
		u.prog.setActivity(fmt.Sprintf("pacing requests to the server's limit (%v apart)", interval))
		time.Sleep(wait)
	}
}

// call runs one RPC under the retry policy, reporting retries as progress.
func (u *Uploader) call(ctx context.Context, fn func(ctx context.Context) error) error {
	r := u.cfg.Retry
	r.OnRetry = func(err error, wait time.Duration) {
		u.prog.Retries.Add(1)
		u.prog.setActivity(fmt.Sprintf("waiting for the server (%s), retrying in %v", status.Code(err), wait.Round(100*time.Millisecond)))
	}
	return r.Do(ctx, fn)
}

// waitSeries waits until no submitted request holding points of s is unacknowledged.
func (u *Uploader) waitSeries(s *migrate.Series) {
	u.mu.Lock()
	for u.inflightSeries[s] > 0 && u.sendCtx.Err() == nil {
		u.space.Wait()
	}
	u.mu.Unlock()
}

// flush seals the current segment with whatever requests are pending.
func (u *Uploader) flush() {
	u.sendPending()
	u.mu.Lock()
	u.notePositionLocked()
	if u.cur != nil {
		u.cur.sealed = true
		u.cur = nil
	}
	u.commitLocked()
	u.mu.Unlock()
}

// sendPending submits everything read so far: packed requests and held blobs.
func (u *Uploader) sendPending() {
	u.sendScalars()
	u.sendTensors()
	u.sendHeldBlobs()
}

// submit queues a request of size bytes for sending, blocking while too much is
// queued; when the current segment is big enough, it is sealed.
func (u *Uploader) submit(size int, series []*migrate.Series, send func(ctx context.Context) error) {
	u.mu.Lock()
	for u.queued > maxQueuedBytes && u.sendCtx.Err() == nil {
		u.space.Wait()
	}
	if u.sendCtx.Err() != nil {
		u.mu.Unlock()
		return
	}
	seg := u.segmentLocked()
	seg.pending++
	seg.bytes += size
	u.queued += int64(size)
	for _, s := range series {
		u.inflightSeries[s]++
	}
	seal := seg.bytes >= segmentBytes
	u.mu.Unlock()

	u.wg.Add(1)
	u.inflight <- struct{}{}
	go func() {
		defer u.wg.Done()
		err := send(u.sendCtx)
		<-u.inflight
		if err != nil {
			u.failSend(err)
		}
		u.mu.Lock()
		seg.pending--
		u.queued -= int64(size)
		for _, s := range series {
			u.inflightSeries[s]--
		}
		if err == nil {
			u.commitLocked()
		}
		u.space.Broadcast()
		u.mu.Unlock()
	}()
	if seal && !u.sealing {
		// What is still being packed or held belongs to this segment: send it first.
		u.sealing = true
		u.sendPending()
		u.sealing = false
		u.mu.Lock()
		u.notePositionLocked()
		if u.cur == seg {
			seg.sealed = true
			u.cur = nil
		}
		u.mu.Unlock()
	}
}

// commitLocked writes every fully acknowledged leading segment to the state file.
func (u *Uploader) commitLocked() {
	if u.sendCtx.Err() != nil {
		return // after a failure nothing more is committed: the next run resends
	}
	changed := false
	for len(u.segments) > 0 {
		s := u.segments[0]
		if !s.sealed || s.pending > 0 {
			break
		}
		for k, off := range s.offsets {
			f := u.cfg.State.Run(k.run).Files[k.file]
			if f == nil {
				f = &state.File{}
				u.cfg.State.Run(k.run).Files[k.file] = f
			}
			f.Offset = off
			if why, ok := s.stopped[k]; ok {
				f.Stopped = why
			}
		}
		for run, tags := range s.series {
			for tag, ser := range tags {
				u.cfg.State.Run(run).Series[tag] = ser
			}
		}
		u.segments = u.segments[1:]
		changed = true
	}
	if changed && u.cfg.SaveState != nil {
		u.crash(CrashStateSaving)
		if err := u.cfg.SaveState(u.cfg.State); err != nil {
			u.failSend(err)
			return
		}
		u.crash(CrashStateSaved)
	}
}

// sendBlobSequence creates the sequence and uploads each of its blobs.
func (u *Uploader) sendBlobSequence(ctx context.Context, job *blobJob) error {
	if u.cfg.Writer == nil {
		u.countBlobs(job)
		return nil
	}
	u.pace(&u.lastBlob, u.cfg.Limits.MinBlobInterval)
	var seqID string
	err := u.call(ctx, func(ctx context.Context) error {
		resp, err := u.cfg.Writer.GetOrCreateBlobSequence(ctx, &servicepb.GetOrCreateBlobSequenceRequest{
			ExperimentId:        u.cfg.ExperimentID,
			Run:                 job.run,
			Tag:                 job.tag,
			Step:                job.step,
			WallTime:            timestamp(job.wall),
			FinalSequenceLength: int64(len(job.blobs)),
			Metadata:            job.md,
		})
		if err == nil {
			seqID = resp.GetBlobSequenceId()
		}
		return err
	})
	if err != nil {
		return err
	}
	u.crash(CrashSequenceCreated)
	for i, b := range job.blobs {
		if job.skip[i] {
			continue
		}
		if err := u.writeBlob(ctx, seqID, int64(i), b); err != nil {
			return fmt.Errorf("blob %d of %s/%s step %d: %w", i, job.run, job.tag, job.step, err)
		}
		u.crash(CrashBlobAcked)
	}
	u.crash(CrashSequenceAcked)
	u.countBlobs(job)
	return nil
}

func (u *Uploader) countBlobs(job *blobJob) {
	u.prog.BlobSequences.Add(1)
	for i, b := range job.blobs {
		if job.skip[i] {
			continue
		}
		u.prog.Blobs.Add(1)
		u.prog.BlobBytes.Add(int64(len(b)))
		u.prog.Bytes.Add(int64(len(b)))
	}
}

// writeBlob uploads one blob in chunks. After a broken stream it asks the server how
// much it holds (GetBlobMetadata) and resumes from there when the CRC of that prefix
// matches, or starts over.
func (u *Uploader) writeBlob(ctx context.Context, seqID string, index int64, data []byte) error {
	chunk := int(u.cfg.Limits.MaxBlobRequestSize)
	if chunk <= 0 {
		chunk = int(client.DefaultLimits.MaxBlobRequestSize)
	}
	offset := 0
	resume := false
	return u.call(ctx, func(ctx context.Context) error {
		if resume {
			md, err := u.cfg.Writer.GetBlobMetadata(ctx, &servicepb.GetBlobMetadataRequest{BlobSequenceId: seqID, Index: index})
			if err != nil && status.Code(err) != codes.NotFound {
				return err
			}
			offset = 0
			switch {
			case md.GetBlobState() == servicepb.BlobState_BLOB_STATE_CURRENT && md.GetSize() == int64(len(data)):
				return nil
			case md.GetBlobState() == servicepb.BlobState_BLOB_STATE_UNFINALIZED && md.GetSize() <= int64(len(data)) &&
				crc32c(data[:md.GetSize()]) == md.GetCrc32C():
				offset = int(md.GetSize())
			}
		}
		resume = true // any failure below resumes from what the server holds
		stream, err := u.cfg.Writer.WriteBlob(ctx)
		if err != nil {
			return err
		}
		for first := true; first || offset < len(data); first = false {
			end := min(offset+chunk, len(data))
			req := &servicepb.WriteBlobRequest{
				BlobSequenceId: seqID,
				Index:          index,
				Data:           data[offset:end],
				Offset:         int64(offset),
				Crc32C:         crc32c(data[offset:end]),
				BlobBytes:      int64(len(data)),
			}
			if end == len(data) {
				req.FinalizeObject = true
				req.FinalCrc32C = crc32c(data)
			}
			if err := stream.Send(req); err != nil {
				break // the real error comes from Recv
			}
			u.crash(CrashChunkSent)
			offset = end
		}
		if err := stream.CloseSend(); err != nil {
			return err
		}
		for {
			_, err := stream.Recv()
			if err == io.EOF {
				return nil
			}
			if status.Code(err) == codes.AlreadyExists {
				return nil // uploaded before (an earlier run): nothing to do
			}
			if err != nil {
				if c := status.Code(err); c == codes.FailedPrecondition || c == codes.OutOfRange || c == codes.DataLoss {
					// The server holds another prefix than we assumed: re-synchronize.
					return status.Error(codes.Aborted, err.Error())
				}
				return err
			}
		}
	})
}

// Summary is what an upload sent, for --json.
type Summary struct {
	ExperimentID string `json:"experiment_id"`
	URL          string `json:"url"`
	Scalars      int64  `json:"scalars"`
	Tensors      int64  `json:"tensors"`
	Blobs        int64  `json:"blobs"`
	BlobBytes    int64  `json:"blob_bytes"`
}

// Summary reports the totals sent so far.
func (u *Uploader) Summary(url string) Summary {
	return Summary{
		ExperimentID: u.cfg.ExperimentID,
		URL:          url,
		Scalars:      u.prog.Scalars.Load(),
		Tensors:      u.prog.Tensors.Load(),
		Blobs:        u.prog.Blobs.Load(),
		BlobBytes:    u.prog.BlobBytes.Load(),
	}
}

func crc32c(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

var castagnoli = crc32.MakeTable(crc32.Castagnoli)
