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
//
// The parts, each with one job: read.go reads and routes points; batch packs points
// into requests; heldBlobs and blobWriter (blobs.go) hold blob sequences back for
// last-write-wins and send them; sender runs requests with a bounded number in
// flight, pacing and retries; ledger records what the server acknowledged and
// saves the state. The Uploader wires them together. docs/delivery.md describes
// the protocol; crash.go names the steps at which tests make the process die.
package upload

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	experimentsv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/experiments/v1"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"

	"github.com/tbhub/tbhub/uploader/internal/client"
	"github.com/tbhub/tbhub/uploader/internal/eventfile"
	"github.com/tbhub/tbhub/uploader/internal/logdir"
	"github.com/tbhub/tbhub/uploader/internal/migrate"
	"github.com/tbhub/tbhub/uploader/internal/state"
)

// Config is what an upload needs.
type Config struct {
	Source logdir.Source
	Writer servicepb.TensorBoardWriterServiceClient // nil for a dry run
	// Experiments records the runs and their start times (PutRuns); nil for
	// a dry run.
	Experiments  experimentsv1.ExperimentServiceClient
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

// ErrNotSent is wrapped by the error an upload ends with when data could not be sent.
var ErrNotSent = errors.New("upload incomplete")

// Uploader runs one upload. Its fields other than the parts' are the reader's
// (one goroutine).
type Uploader struct {
	cfg    Config
	prog   *Progress
	send   *sender // made by Run
	ledger *ledger
	batch  batch
	held   heldBlobs
	blobs  blobWriter

	scalarPace, tensorPace pacer

	runs   map[string]*migrate.Run
	series map[*migrate.Series]*seriesState

	// The reader's position not yet noted in the ledger.
	readKey     fileKey
	readPos     int64
	readMoved   bool
	readSkipped int64 // damaged records of readKey passed over since its position was last noted

	sealing bool // submit must not seal while a seal drains what is pending

	starts runStarts // runs told to the server (reader goroutine only)
	damage damage    // damaged records found (reader goroutine only)
}

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
	if cfg.Crash == nil {
		cfg.Crash = func(CrashPoint) {}
	}
	u := &Uploader{
		cfg:        cfg,
		prog:       cfg.Progress,
		batch:      batch{experimentID: cfg.ExperimentID, maxScalar: int(cfg.Limits.MaxScalarRequestSize), maxTens: int(cfg.Limits.MaxTensorRequestSize)},
		scalarPace: pacer{interval: cfg.Limits.MinScalarInterval},
		tensorPace: pacer{interval: cfg.Limits.MinTensorInterval},
		runs:       map[string]*migrate.Run{},
		series:     map[*migrate.Series]*seriesState{},
	}
	u.blobs = blobWriter{
		writer: cfg.Writer, experimentID: cfg.ExperimentID, chunk: int(cfg.Limits.MaxBlobRequestSize),
		pace: &pacer{interval: cfg.Limits.MinBlobInterval}, prog: u.prog, crash: cfg.Crash,
	}
	u.ledger = newLedger(cfg.State, cfg.SaveState, cfg.Crash,
		func() bool { return u.send.err() != nil },
		func(err error) { u.send.fail(err) })
	u.prog.ExperimentID = cfg.ExperimentID
	// What an earlier upload skipped is behind the offsets it saved: not
	// read again, still told to the server (reportDamage).
	for name, r := range cfg.State.Runs {
		for file, f := range r.Files {
			if f.Skipped > 0 {
				u.damage.skipped(fileKey{name, file}, f.Skipped)
			}
		}
	}
	return u
}

// Run uploads until the logdir is done (one-shot) or ctx is cancelled (continuous:
// Ctrl-C). Either way it stops reading, sends what it has read, waits for the
// server's acknowledgements and saves the state before it returns.
func (u *Uploader) Run(ctx context.Context) error {
	// Sending outlives an interrupt so that what was read is flushed; it stops only
	// on a permanent failure or if flushing takes too long.
	u.send = newSender(ctx, u.cfg.InFlight, u.cfg.Retry, u.prog)
	defer u.send.fail(nil)
	u.blobs.send = u.send
	u.restore()
	changes := u.watch(ctx)
	var err error
	for {
		u.prog.setActivity("reading")
		passed := time.Now()
		err = u.pass(ctx)
		u.flush()
		u.prog.setActivity("sending")
		u.send.wait(ctx)
		u.ledger.commit()
		if err != nil || u.send.err() != nil || u.cfg.OneShot || ctx.Err() != nil {
			break
		}
		u.prog.caughtUp()
		u.prog.setActivity("watching the logdir")
		select {
		case <-ctx.Done():
		case <-time.After(u.cfg.Poll):
		case _, ok := <-changes:
			if !ok {
				changes = nil // the watch ended: polling alone from now on
				break
			}
			// A job writing all the time notifies all the time: one pass
			// (a scan of the logdir) per notifiedPassEvery at most.
			select {
			case <-ctx.Done():
			case <-time.After(notifiedPassEvery - time.Since(passed)):
			}
		}
		if ctx.Err() != nil {
			break
		}
	}
	if serr := u.send.err(); serr != nil {
		return fmt.Errorf("%w: %s; %s. Run the same command again to send the rest", ErrNotSent, client.Describe(serr), u.unsent())
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	if n := u.prog.Unreadable.Load(); n > 0 && u.cfg.OneShot {
		return fmt.Errorf("%w: %s could not be read (see the warnings above); everything else was sent", ErrNotSent, Plural(n, "event file", "event files"))
	}
	if n := u.prog.Rejected.Load(); n > 0 {
		return fmt.Errorf("%w: the server rejected %s, listed in the warnings above; everything else was stored", ErrNotSent, Plural(n, "point or request", "points or requests"))
	}
	// Done: a one-shot upload that ended on its own, or an interrupted one
	// that had read and sent every byte the logdir held.
	if u.cfg.OneShot && ctx.Err() == nil || u.prog.allRead() {
		u.prog.finish()
	}
	return nil
}

// notifiedPassEvery is the least time between the starts of two passes
// started by change notifications: the changes of a burst are read
// together, for at most this much delay.
const notifiedPassEvery = 200 * time.Millisecond

// watch starts the logdir's change notifications for a continuous upload
// of a Source that has them (a local logdir), so that new data is read at
// once rather than at the next poll. It returns nil (a channel that never
// receives: polling alone) for a one-shot upload, a gs:// logdir, or when
// the watch cannot start, e.g. past the system's limit on inotify watches.
// Started before the first pass, it misses no change made during it.
func (u *Uploader) watch(ctx context.Context) <-chan struct{} {
	w, ok := u.cfg.Source.(logdir.Watcher)
	if !ok || u.cfg.OneShot {
		return nil
	}
	changes, err := w.Watch(ctx)
	if err != nil {
		u.prog.warn("not notified of changes (%v): looking for new data every %s instead", err, u.cfg.Poll)
		return nil
	}
	return changes
}

// unsent describes what the state does not yet cover.
func (u *Uploader) unsent() string {
	n := u.pendingRequests()
	verb := "were"
	if n == 1 {
		verb = "was"
	}
	return fmt.Sprintf("%s %s not acknowledged; %s", Plural(int64(n), "request", "requests"), verb, u.prog.counts())
}

// pendingRequests counts submitted requests not yet acknowledged.
func (u *Uploader) pendingRequests() int { return u.ledger.pending() }

// flush submits everything read so far and seals the current segment.
func (u *Uploader) flush() {
	u.sendPending()
	u.notePosition()
	u.ledger.seal(nil)
}

// sendPending submits everything read so far: packed requests and held blobs.
func (u *Uploader) sendPending() {
	u.sendScalars()
	u.sendTensors()
	u.sendHeld()
}

func (u *Uploader) sendScalars() {
	if r := u.batch.takeScalars(); r != nil {
		req := r.msg.(*servicepb.WriteScalarRequest)
		u.sendPoints(r, &u.scalarPace, &u.prog.Scalars, func(ctx context.Context) error {
			_, err := u.cfg.Writer.WriteScalar(ctx, req)
			return err
		})
	}
}

func (u *Uploader) sendTensors() {
	if r := u.batch.takeTensors(); r != nil {
		req := r.msg.(*servicepb.WriteTensorRequest)
		u.sendPoints(r, &u.tensorPace, &u.prog.Tensors, func(ctx context.Context) error {
			_, err := u.cfg.Writer.WriteTensor(ctx, req)
			return err
		})
	}
}

// sendPoints submits one WriteScalar or WriteTensor request.
func (u *Uploader) sendPoints(r *pointRequest, pace *pacer, sent *atomic.Int64, write func(ctx context.Context) error) {
	u.submit(r.size, r.series, func(ctx context.Context) error {
		pace.wait(u.prog)
		if u.cfg.Writer != nil {
			if err := u.send.call(ctx, write); err != nil && !u.send.rejected(err) {
				return err
			}
			u.cfg.Crash(CrashPointsAcked)
		}
		sent.Add(int64(r.points))
		u.prog.Bytes.Add(int64(r.size)) // the packed estimate; proto.Size costs a walk of the request
		return nil
	})
}

// sendHeld submits the blob sequences held back, in the order they were read,
// each after the requests of its series in flight if it rewrites a step.
func (u *Uploader) sendHeld() {
	for job := u.held.next(); job != nil; job = u.held.next() {
		if job.rewrite {
			u.ledger.waitSeries(job.series)
		}
		u.submit(job.size, []*migrate.Series{job.series}, func(ctx context.Context) error { return u.blobs.sendSequence(ctx, job) })
	}
}

// submit queues a request of size bytes for sending, blocking while too much is
// queued; when the current segment is big enough, it is sealed once everything
// read so far has joined it.
func (u *Uploader) submit(size int, series []*migrate.Series, send func(ctx context.Context) error) {
	seg, full := u.ledger.join(size, series)
	if seg == nil {
		return // sending failed
	}
	u.send.start(send, func(err error) { u.ledger.done(seg, size, series, err == nil) })
	if full && !u.sealing {
		u.sealing = true
		u.sendPending()
		u.sealing = false
		u.notePosition()
		u.ledger.seal(seg)
	}
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
