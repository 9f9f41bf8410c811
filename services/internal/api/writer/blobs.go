package writer

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"time"

	"google.golang.org/grpc/codes"

	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
	"github.com/tbhub/tbhub/services/internal/policy/rpcerr"
	"github.com/tbhub/tbhub/services/internal/policy/tenancy"
	"github.com/tbhub/tbhub/services/internal/storage/blob"
	"github.com/tbhub/tbhub/services/internal/storage/store"
	"github.com/tbhub/tbhub/services/internal/storage/walltime"
)

// Blob uploads.
//
// A blob sequence is one (run, tag, step) with final_sequence_length
// slots; its ID (store.BlobSequenceID) carries the experiment and the key.
// Each slot is uploaded by one WriteBlob stream of chunks at increasing
// offsets, the last one with finalize_object.
//
// Streaming. The chunks of one stream are written through an io.Pipe into
// a single blob.Store Put that stays open for the whole stream, straight
// to the blob's final object key: the server holds one chunk at a time,
// never the blob, and the common case (a whole blob in one stream) writes
// each byte once. Put replaces objects atomically, so a reader of the
// object never sees a mix.
//
// Resuming. When a stream ends without finalize_object (broken connection,
// client gone, a rejected chunk), the pipe is closed normally, so the Put
// commits exactly the complete chunks received, and the blob's row is
// written with state UNFINALIZED, the size and the CRC32C of those bytes,
// which GetBlobMetadata reports. A new stream may start at that offset:
// its Put reads the stored prefix back (checking it against the row's
// CRC32C) and continues with the new chunks, so one blob costs at most one
// extra copy of its prefix per interruption, server side. A stream at
// offset 0 always starts over (the stock uploader never resumes); any
// other offset is FAILED_PRECONDITION.
//
// Commit order. The object is written before its row, and only a row in
// state CURRENT (written after the finalizing Put succeeded) makes a blob
// readable; a failed Put leaves the previous object and row as they were.
//
// Keys. Objects are named by blob.ObjectKey, which holds no run or tag
// name; the row records the key, and readers use the row's key. A partial
// blob whose row names a key of the older layout is resumed from that key
// and continues under the current one; the old object is deleted once the
// row points at the new one (docs/object-layout.md).
//
// Rewrites. A GetOrCreateBlobSequence for an existing step with the same
// wall time and length is the same write again and changes nothing; one
// with another wall time or length rewrites the step (last write wins, as
// for scalars and tensors): the old blobs' rows and objects are deleted and
// the new slots are uploaded as usual.
//
// Empty blobs. tbup sends a zero-byte blob as one request with
// blob_bytes 0 and finalize_object; TensorBoard's uploader as a stream
// with no request, whose slot the server infers (emptyblob.go).
//
// Checksums. Stock uploaders send no CRC32C: crc32c and final_crc32c are
// checked only when non-zero (a real CRC of zero is then not checked, a
// one-in-2^32 loss of checking, never of data).

func (w *writerService) GetOrCreateBlobSequence(ctx context.Context, req *servicepb.GetOrCreateBlobSequenceRequest) (*servicepb.GetOrCreateBlobSequenceResponse, error) {
	e, err := tenancy.AuthorizedExperiment(ctx)
	if err != nil {
		return nil, err
	}
	p, err := tenancy.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := w.s.limits.Allow(p.UserID); err != nil {
		return nil, err
	}
	for kind, name := range map[string]string{"run": req.GetRun(), "tag": req.GetTag()} {
		if reason := checkRunTag(kind, name); reason != "" {
			return nil, rpcerr.New(codes.InvalidArgument, "%s", reason)
		}
	}
	wall, reason := walltime.Seconds(req.GetWallTime())
	if reason != "" {
		return nil, rpcerr.New(codes.InvalidArgument, "run %q tag %q step %d: %s", req.GetRun(), req.GetTag(), req.GetStep(), reason)
	}
	n := req.GetFinalSequenceLength()
	if max := w.s.limits.Limits().MaxBlobsPerSequence; n < 0 || n > max {
		return nil, rpcerr.New(codes.InvalidArgument, "final_sequence_length %d: must be between 0 and %d", n, max)
	}
	ts, reason := seriesOf(req.GetRun(), req.GetTag(), req.GetMetadata(), store.DataClassBlobSequence, w.s.limits.Limits().MaxMetadataBytes)
	if reason != "" {
		return nil, rpcerr.New(codes.InvalidArgument, "run %q tag %q: %s", req.GetRun(), req.GetTag(), reason)
	}
	runBytes, err := w.s.newRuns(ctx, e.ID, []string{req.GetRun()})
	if err != nil {
		return nil, err
	}
	if err := w.s.limits.ReserveStoredBytes(ctx, p.UserID, int64(len(ts.SummaryMetadata))+runBytes); err != nil {
		return nil, err
	}
	_, replaced, err := w.s.st.GetOrCreateBlobSequence(ctx, e.ID, ts, req.GetStep(), wall, n)
	if err != nil {
		if errors.Is(err, store.ErrFailedPrecondition) {
			return nil, rpcerr.New(codes.FailedPrecondition, "run %q tag %q already holds data of another class", req.GetRun(), req.GetTag())
		}
		return nil, err
	}
	// A rewritten step's old blobs have no rows any more; their objects go too,
	// before the client can start writing the new ones under the same keys.
	for _, b := range replaced {
		if err := deleteRowObject(ctx, w.s.blobs, b); err != nil {
			w.s.logger.WarnContext(ctx, "deleting a replaced blob", "experiment_id", e.ID, "object_key", b.ObjectKey, "error", err.Error())
		}
	}
	seqID := store.BlobSequenceID(e.ID, req.GetRun(), req.GetTag(), req.GetStep())
	w.s.cursors.start(cursorKey(ctx, p.UserID), seqID, n, w.s.now())
	return &servicepb.GetOrCreateBlobSequenceResponse{BlobSequenceId: seqID}, nil
}

// deleteRowObject deletes the object a removed blob row stood for: its
// generation, so that a newer object under the key (a stream that started
// the slot over) stays; any object, for rows that record none.
func deleteRowObject(ctx context.Context, blobs blob.Store, b store.Blob) error {
	if b.Generation != blob.NoObject {
		return blobs.DeleteGeneration(ctx, b.ObjectKey, b.Generation)
	}
	return blobs.Delete(ctx, b.ObjectKey)
}

// blobSlot is one slot of a blob sequence and its row, if any.
type blobSlot struct {
	eid string
	ref store.BlobRef
	row *store.Blob
}

// findSlot resolves a blob sequence ID and index against the store.
func (s *Server) findSlot(ctx context.Context, seqID string, index int64) (blobSlot, error) {
	eid, ref, err := store.ParseBlobSequenceID(seqID)
	if err != nil {
		return blobSlot{}, rpcerr.New(codes.InvalidArgument, "malformed blob_sequence_id")
	}
	ref.Index = index
	var point *store.BlobSequencePoint
	q := store.Query{
		Filter:  store.Filter{Runs: []string{ref.Run}, Tags: []string{ref.Tag}},
		MinStep: &ref.Step, MaxStep: &ref.Step, MaxPoints: store.AllPoints,
	}
	err = s.st.ReadBlobSequences(ctx, eid, q, func(_ *store.TimeSeries, points []store.BlobSequencePoint) error {
		for _, p := range points {
			if p.Step == ref.Step {
				cp := p
				cp.Blobs = append([]store.Blob(nil), p.Blobs...)
				point = &cp
			}
		}
		return nil
	})
	if err != nil {
		return blobSlot{}, err
	}
	if point == nil {
		return blobSlot{}, rpcerr.New(codes.NotFound, "blob sequence not found")
	}
	if index < 0 || index >= point.Length {
		return blobSlot{}, rpcerr.New(codes.InvalidArgument, "index %d is outside the sequence's %d slots", index, point.Length)
	}
	slot := blobSlot{eid: eid, ref: ref}
	for i := range point.Blobs {
		if point.Blobs[i].Index == index {
			slot.row = &point.Blobs[i]
		}
	}
	return slot, nil
}

func (w *writerService) GetBlobMetadata(ctx context.Context, req *servicepb.GetBlobMetadataRequest) (*servicepb.GetBlobMetadataResponse, error) {
	slot, err := w.s.findSlot(ctx, req.GetBlobSequenceId(), req.GetIndex())
	if err != nil {
		return nil, err
	}
	if slot.row == nil {
		return &servicepb.GetBlobMetadataResponse{BlobState: servicepb.BlobState_BLOB_STATE_UNKNOWN}, nil
	}
	return &servicepb.GetBlobMetadataResponse{
		BlobState: servicepb.BlobState(slot.row.State), Size: slot.row.Size, Crc32C: slot.row.CRC32C,
	}, nil
}

func (w *writerService) WriteBlob(stream servicepb.TensorBoardWriterService_WriteBlobServer) error {
	lim := w.s.limits.Limits()
	in := newChunkReader(stream, lim.BlobStreamIdleTimeout, lim.BlobStreamTimeout)
	defer in.stop()
	first, err := in.next()
	if err == io.EOF {
		// TensorBoard's uploader sends a zero-byte blob so (emptyblob.go).
		if first, err = w.s.emptyBlobRequest(stream); first == nil {
			return err
		}
	}
	if err != nil {
		return err
	}
	// The guard authorized the first message; its context holds the
	// experiment from here on.
	ctx := stream.Context()
	e, err := tenancy.AuthorizedExperiment(ctx)
	if err != nil {
		return err
	}
	p, err := tenancy.Caller(ctx)
	if err != nil {
		return err
	}
	if err := w.s.limits.Allow(p.UserID); err != nil {
		return err
	}
	// Each stream holds an object being written until it ends: bounded
	// per user and per user and client address.
	release, err := w.s.limits.AcquireBlobStream(p.UserID, w.s.clientOf(ctx))
	if err != nil {
		return err
	}
	defer release()
	eid, ref, err := store.ParseBlobSequenceID(first.GetBlobSequenceId())
	if err != nil || eid != e.ID {
		return rpcerr.New(codes.InvalidArgument, "malformed blob_sequence_id")
	}
	w.s.cursors.wrote(cursorKey(ctx, p.UserID), first.GetBlobSequenceId(), first.GetIndex(), w.s.now())
	// One stream per blob at a time in this process, taken before the
	// slot's state is read; an optimization only: streams of other
	// processes are kept apart by generations (see startUpload).
	key := blob.ObjectKey(eid, ref.Run, ref.Tag, ref.Step, first.GetIndex())
	if _, busy := w.s.uploads.LoadOrStore(key, struct{}{}); busy {
		return rpcerr.New(codes.Aborted, "another upload of this blob is in progress")
	}
	defer w.s.uploads.Delete(key)
	// The object's generation is read before the row: see startUpload.
	base, err := objectGeneration(ctx, w.s.blobs, key)
	if err != nil {
		return err
	}
	slot, err := w.s.findSlot(ctx, first.GetBlobSequenceId(), first.GetIndex())
	if err != nil {
		return err
	}
	up, err := w.s.startUpload(ctx, p.UserID, slot, key, base, first)
	if err != nil {
		return err
	}
	return up.run(ctx, stream, in, first)
}

// objectGeneration is the generation of the object at key, blob.NoObject
// if there is none.
func objectGeneration(ctx context.Context, blobs blob.Store, key string) (int64, error) {
	a, err := blobs.Stat(ctx, key)
	if errors.Is(err, blob.ErrNotFound) {
		return blob.NoObject, nil
	}
	if err != nil {
		return 0, fmt.Errorf("writer: blob %s: %w", key, err)
	}
	return a.Generation, nil
}

// errLostRace answers a stream that another stream of the same blob (on
// this or another server instance) overtook: nothing it sent is kept.
var errLostRace = rpcerr.New(codes.Aborted, "another upload of this blob changed it meanwhile; call GetBlobMetadata and continue from its size")

// upload is one WriteBlob stream in progress.
type upload struct {
	s        *Server
	slot     blobSlot
	key      string
	total    int64  // blob_bytes
	received int64  // bytes accepted so far, including a resumed prefix
	crc      uint32 // CRC32C of those bytes
	base     int64  // generation of the object the Put replaces
	row      store.BlobMatch
	pw       *io.PipeWriter
	putDone  chan putResult
	settle   func(stored int64) // of the quota reservation
	userID   string
	// quotaCtx carries the byte quota the store checks when the row
	// grows (withBlobQuota); it survives the stream.
	quotaCtx context.Context
}

type putResult struct {
	attrs blob.Attrs
	err   error
}

// startUpload checks the first request against the slot's state and starts
// the Put that the stream feeds.
//
// Two streams of one blob may run at once on two server instances (a
// stream cut on one and resumed on another while the first still
// finishes). Each writes the object only over the generation it found
// (base, read before the row) and the row only if it still records what
// the stream last read or wrote, so whichever commits second fails and
// keeps nothing, and a late unfinished row never replaces a current one:
//
//   - With no row and no object, the Put must create the object: of two
//     such streams one wins.
//   - With a row, or an object and no row (a stream that committed its
//     object and not yet its row, or one that died in between), the stream
//     first claims the row: it rewrites it to record base. A stream that
//     committed an object over an older generation then fails to write its
//     row, and its object, which no row names, is the one this Put
//     replaces. The claim also refreshes an unfinished row's write time,
//     so that the sweeper leaves the blob alone while the stream lasts.
//
// The row is then written only over the row the stream read or claimed
// (store.Writer.PutBlobIf).
func (s *Server) startUpload(ctx context.Context, userID string, slot blobSlot, key string, base int64, first *servicepb.WriteBlobRequest) (*upload, error) {
	if slot.row != nil && slot.row.State == store.BlobStateCurrent {
		return nil, rpcerr.New(codes.AlreadyExists, "blob already uploaded")
	}
	total := first.GetBlobBytes()
	if total < 0 || (total == 0 && (len(first.GetData()) > 0 || !first.GetFinalizeObject())) {
		return nil, rpcerr.New(codes.InvalidArgument, "blob_bytes (the blob's total size) is required on the first request")
	}
	if max := s.limits.Limits().MaxBlobBytes; total > max {
		return nil, rpcerr.New(codes.ResourceExhausted, "blob size limit is %d bytes; this blob has %d", max, total)
	}
	offset := first.GetOffset()
	if offset < 0 {
		return nil, rpcerr.New(codes.InvalidArgument, "offset %d is negative", offset)
	}
	resume := offset > 0
	if resume && (slot.row == nil || slot.row.Size != offset) {
		have := int64(0)
		if slot.row != nil {
			have = slot.row.Size
		}
		return nil, rpcerr.New(codes.FailedPrecondition,
			"offset %d does not continue the %d bytes received; call GetBlobMetadata and resume from its size", offset, have)
	}
	// The bytes the stream may add are reserved now, against streams the
	// user runs at once, and settled to what was stored when it ends.
	quotaCtx, err := s.withBlobQuota(context.WithoutCancel(ctx), userID)
	if err != nil {
		return nil, err
	}
	settle, err := s.limits.ReserveBlobBytes(ctx, userID, total-offset)
	if err != nil {
		return nil, err
	}
	up := &upload{s: s, slot: slot, total: total, key: key, base: base, row: store.MatchOf(slot.row),
		putDone: make(chan putResult, 1), settle: settle, userID: userID, quotaCtx: quotaCtx}
	if slot.row != nil || base != blob.NoObject {
		claim := store.Blob{Index: slot.ref.Index, ObjectKey: key, State: store.BlobStateUnfinalized}
		if slot.row != nil {
			claim = *slot.row
		}
		claim.Generation = base
		if err := s.st.PutBlobIf(ctx, slot.eid, slot.ref, claim, up.row); err != nil {
			settle(0)
			if errors.Is(err, store.ErrConflict) {
				return nil, errLostRace
			}
			return nil, fmt.Errorf("writer: blob %s: %w", key, err)
		}
		up.row = store.MatchOf(&claim)
	}
	// The Put outlives a broken stream: it must commit what was received.
	putCtx := context.WithoutCancel(ctx)
	pr, pw := io.Pipe()
	up.pw = pw
	var src io.Reader = pr
	var prefix io.ReadCloser
	if resume {
		var err error
		// The prefix is where the row says it is: a partial blob written
		// under an older key layout moves to the current key here.
		prefix, err = s.blobs.NewRangeReader(putCtx, slot.row.ObjectKey, 0, offset)
		if errors.Is(err, blob.ErrNotFound) {
			// Swept as abandoned after the row was read: as for a changed
			// prefix, the row says nothing is stored and the client
			// starts over.
			settle(0)
			_ = up.record(blob.Attrs{Generation: base}, store.BlobStateUnfinalized)
			return nil, rpcerr.New(codes.Aborted, "the partial upload could not be resumed; restart from offset 0")
		}
		if err != nil {
			settle(0)
			return nil, fmt.Errorf("writer: reopen partial blob %s: %w", slot.row.ObjectKey, err)
		}
		up.received, up.crc = offset, slot.row.CRC32C
		src = io.MultiReader(&prefixReader{r: prefix, want: slot.row.CRC32C, size: offset}, pr)
	}
	opts := blob.PutOptions{IfGeneration: &up.base, Size: total}
	if !resume && int64(len(first.GetData())) == total {
		// The whole blob in one request (most images): its CRC32C goes
		// with the upload, for the bucket to check the bytes it stores.
		// Longer blobs' checksums are known only at their end; the bucket
		// computes theirs and Put compares it with the bytes streamed.
		crc := crc32.Checksum(first.GetData(), blob.CastagnoliTable)
		opts.WantCRC32C = &crc
	}
	go func() {
		attrs, err := s.blobs.Put(putCtx, up.key, src, opts)
		if prefix != nil {
			prefix.Close()
		}
		// Unblocks the stream's writer if Put stopped early.
		pr.CloseWithError(errors.Join(err, io.ErrClosedPipe))
		up.putDone <- putResult{attrs, err}
	}()
	return up, nil
}

// run feeds the stream's chunks to the Put and records the outcome.
func (up *upload) run(ctx context.Context, stream servicepb.TensorBoardWriterService_WriteBlobServer, in *chunkReader, first *servicepb.WriteBlobRequest) error {
	// The bytes this stream added to the store, once its row says so.
	start, stored := up.received, int64(0)
	defer func() { up.settle(stored) }()
	req := first
	finalized := false
	var streamErr error
	for {
		if err := up.check(req); err != nil {
			streamErr = err
			break
		}
		if _, err := up.pw.Write(req.GetData()); err != nil {
			streamErr = fmt.Errorf("writer: blob %s: %w", up.key, err)
			break
		}
		up.received += int64(len(req.GetData()))
		up.crc = crc32.Update(up.crc, blob.CastagnoliTable, req.GetData())
		if req.GetFinalizeObject() {
			if up.received != up.total {
				streamErr = rpcerr.New(codes.InvalidArgument, "finalized after %d bytes; blob_bytes said %d", up.received, up.total)
				break
			}
			if want := req.GetFinalCrc32C(); want != 0 && want != up.crc {
				streamErr = rpcerr.New(codes.InvalidArgument, "blob CRC32C is %08x; final_crc32c says %08x", up.crc, want)
				break
			}
			finalized = true
			break
		}
		if err := stream.Send(&servicepb.WriteBlobResponse{BlobState: servicepb.BlobState_BLOB_STATE_UNFINALIZED, Size: up.received}); err != nil {
			streamErr = err
			break
		}
		next, err := in.next()
		if err == io.EOF {
			break // the client ended without finalizing: keep what arrived
		}
		if err != nil {
			streamErr = err
			break
		}
		req = next
	}
	// Closing the pipe normally ends the Put with exactly the chunks
	// accepted; a failing finalize check above keeps them too.
	up.pw.Close()
	put := <-up.putDone
	if err := put.err; err != nil {
		switch {
		case errors.Is(err, errPrefixChanged):
			// The stored partial is not what its row says: make the
			// client start over.
			_ = up.record(blob.Attrs{Generation: up.base}, store.BlobStateUnfinalized)
			return rpcerr.New(codes.Aborted, "the partial upload could not be resumed; restart from offset 0")
		case errors.Is(err, blob.ErrPrecondition):
			return errLostRace
		}
		return errors.Join(streamErr, fmt.Errorf("writer: store blob %s: %w", up.key, err))
	}
	state := store.BlobStateUnfinalized
	if finalized {
		state = store.BlobStateCurrent
	}
	put.attrs.Size, put.attrs.CRC32C = up.received, up.crc
	if err := up.record(put.attrs, state); err != nil {
		if errors.Is(err, store.ErrConflict) {
			// Another stream claimed the row after this one's Put
			// committed: its Put replaces this object.
			return errLostRace
		}
		if errors.Is(err, store.ErrQuotaExceeded) {
			// The store refused the row: no row names the object just
			// written, which goes (only that generation: another stream
			// may have replaced it since).
			if derr := up.s.blobs.DeleteGeneration(context.WithoutCancel(ctx), up.key, put.attrs.Generation); derr != nil && !errors.Is(derr, blob.ErrNotFound) {
				up.s.logger.WarnContext(ctx, "deleting a blob's object the byte quota refused", "object_key", up.key, "error", derr.Error())
			}
			return up.s.storeRefused(up.userID, err)
		}
		return err
	}
	stored = up.received - start
	if old := up.slot.row; old != nil && old.ObjectKey != up.key {
		// No row names the old object any more.
		if err := up.s.blobs.Delete(context.WithoutCancel(ctx), old.ObjectKey); err != nil {
			up.s.logger.WarnContext(ctx, "deleting a blob's object under its old key", "object_key", old.ObjectKey, "error", err.Error())
		}
	}
	if !finalized {
		return streamErr
	}
	return stream.Send(&servicepb.WriteBlobResponse{BlobState: servicepb.BlobState_BLOB_STATE_CURRENT, Size: up.received})
}

// check validates one request of the stream.
func (up *upload) check(req *servicepb.WriteBlobRequest) error {
	if id := req.GetBlobSequenceId(); id != "" && id != store.BlobSequenceID(up.slot.eid, up.slot.ref.Run, up.slot.ref.Tag, up.slot.ref.Step) {
		return rpcerr.New(codes.InvalidArgument, "blob_sequence_id changed within the stream")
	}
	if req.GetIndex() != up.slot.ref.Index {
		return rpcerr.New(codes.InvalidArgument, "index changed within the stream")
	}
	if b := req.GetBlobBytes(); b != 0 && b != up.total {
		return rpcerr.New(codes.InvalidArgument, "blob_bytes changed within the stream (%d, then %d)", up.total, b)
	}
	if req.GetOffset() != up.received {
		return rpcerr.New(codes.FailedPrecondition, "chunk offset %d does not follow the %d bytes received; call GetBlobMetadata", req.GetOffset(), up.received)
	}
	data := req.GetData()
	if max := up.s.limits.Limits().MaxBlobChunkBytes; int64(len(data)) > max {
		return rpcerr.New(codes.ResourceExhausted, "chunk at offset %d has %d bytes; the chunk limit advertised in the handshake is %d", req.GetOffset(), len(data), max)
	}
	if up.received+int64(len(data)) > up.total {
		return rpcerr.New(codes.InvalidArgument, "chunk at offset %d runs past blob_bytes (%d)", req.GetOffset(), up.total)
	}
	if want := req.GetCrc32C(); want != 0 && crc32.Checksum(data, blob.CastagnoliTable) != want {
		return rpcerr.New(codes.InvalidArgument, "chunk at offset %d fails its CRC32C", req.GetOffset())
	}
	return nil
}

// record writes the blob's row for the object a (its generation, size and
// CRC32C), on a context that survives the stream and carries the byte
// quota (quotaCtx), if the row is still the one the stream read or
// claimed.
func (up *upload) record(a blob.Attrs, state store.BlobState) error {
	b := store.Blob{
		Index: up.slot.ref.Index, ObjectKey: up.key, Size: a.Size, CRC32C: a.CRC32C, State: state, Generation: a.Generation,
	}
	if err := up.s.st.PutBlobIf(up.quotaCtx, up.slot.eid, up.slot.ref, b, up.row); err != nil {
		return fmt.Errorf("writer: record blob %s: %w", up.key, err)
	}
	up.row = store.MatchOf(&b)
	return nil
}

var errPrefixChanged = errors.New("stored partial blob does not match its row")

// prefixReader reads the stored prefix of a resumed blob and fails the
// Put if it is not the size and CRC32C its row promised.
type prefixReader struct {
	r    io.ReadCloser
	want uint32
	size int64
	n    int64
	crc  uint32
}

func (p *prefixReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.n += int64(n)
	p.crc = crc32.Update(p.crc, blob.CastagnoliTable, b[:n])
	if err == io.EOF && (p.n != p.size || p.crc != p.want) {
		return n, errPrefixChanged
	}
	return n, err
}

// SweepAbandonedBlobs removes up to limit unfinished blobs whose row was
// last written before the given time (store.SweepAbandonedBlobs), rows and
// objects; the bytes they held leave their owners' quota usage. A blob a
// stream of this process is writing is skipped, and no stream starts on a
// blob while it is being removed. An object written after the given time
// stays (deleteUnlessWrittenSince).
func (s *Server) SweepAbandonedBlobs(ctx context.Context, before time.Time, limit int) (int, error) {
	return store.SweepAbandonedBlobs(ctx, s.st, func(ctx context.Context, b store.AbandonedBlob) error {
		if b.Generation != blob.NoObject {
			// Exactly the object the row named: one a stream of another
			// process wrote since has another generation and stays.
			return s.blobs.DeleteGeneration(ctx, b.ObjectKey, b.Generation)
		}
		return deleteUnlessWrittenSince(ctx, s.blobs, b.ObjectKey, before)
	}, func(b store.AbandonedBlob) (func(), bool) {
		key := blob.ObjectKey(b.Experiment, b.Ref.Run, b.Ref.Tag, b.Ref.Step, b.Ref.Index)
		if _, busy := s.uploads.LoadOrStore(key, struct{}{}); busy {
			return nil, false
		}
		return func() { s.uploads.Delete(key) }, true
	}, before, limit)
}

// deleteUnlessWrittenSince deletes the object at key unless it was
// written at or after since: for rows that record no generation (written
// by an older release, or before their upload's first commit). The sweeper removes an abandoned blob's row
// first; a stream of another process that resumed the blob in between
// writes its object after that row's time, and keeps it: only a write
// landing between this Stat and the Delete is lost.
func deleteUnlessWrittenSince(ctx context.Context, blobs blob.Store, key string, since time.Time) error {
	a, err := blobs.Stat(ctx, key)
	if errors.Is(err, blob.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if !a.Updated.Before(since) {
		return nil
	}
	return blobs.Delete(ctx, key)
}
