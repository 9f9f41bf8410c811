package upload

import (
	"context"
	"fmt"
	"hash/crc32"
	"io"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"

	"github.com/tbhub/tbhub/uploader/internal/client"
	"github.com/tbhub/tbhub/uploader/internal/migrate"
)

// The blob pipeline: blob-sequence points (images, audio, graphs) are held back
// for last-write-wins (heldBlobs), then each is sent as one GetOrCreateBlobSequence
// and one WriteBlob stream per blob (blobWriter).

// blobJob is one blob-sequence point to upload.
type blobJob struct {
	series   *migrate.Series
	run, tag string
	step     int64
	wall     float64
	md       *tbpb.SummaryMetadata
	blobs    [][]byte
	skip     []bool // blobs over the size limit: their slots stay empty
	size     int    // bytes of blobs held
	rewrite  bool   // the step was read before: an earlier write may be in flight
}

// maxHeldBlobBytes bounds the blob sequences held back for last-write-wins.
const maxHeldBlobBytes = 32 << 20

// heldBlobs are blob sequences read but not yet submitted, in the order read. A
// later event at the same step (TF1 writes its graph again, a job restarts)
// replaces the one held, so the last write wins as it does for scalars.
type heldBlobs struct {
	jobs  []*blobJob
	index map[blobKey]int // position in jobs
	bytes int
}

type blobKey struct {
	series *migrate.Series
	step   int64
}

// hold adds job, replacing a held job of the same series and step; it says
// whether the bytes held now exceed maxHeldBlobBytes.
func (h *heldBlobs) hold(job *blobJob) (full bool) {
	if h.index == nil {
		h.index = map[blobKey]int{}
	}
	key := blobKey{job.series, job.step}
	if i, ok := h.index[key]; ok {
		h.bytes += job.size - h.jobs[i].size
		job.rewrite = job.rewrite && h.jobs[i].rewrite // the held one was never sent
		h.jobs[i] = job
	} else {
		h.index[key] = len(h.jobs)
		h.jobs = append(h.jobs, job)
		h.bytes += job.size
	}
	return h.bytes > maxHeldBlobBytes
}

// next takes the oldest job out, nil if none. Jobs leave one at a time so that
// the ones not yet taken stay pending while the first are submitted: a segment
// sealed meanwhile must see them (docs/delivery.md).
func (h *heldBlobs) next() *blobJob {
	if len(h.jobs) == 0 {
		return nil
	}
	h.index = nil // positions move; nothing is held again before the queue is empty
	job := h.jobs[0]
	h.jobs = h.jobs[1:]
	h.bytes -= job.size
	if len(h.jobs) == 0 {
		h.jobs = nil
	}
	return job
}

// newBlobJob reads a blob-sequence point's blobs; those over maxBlob bytes are
// skipped (their slots stay empty, so later blobs keep their index).
func newBlobJob(run string, s *migrate.Series, p *migrate.Point, md *tbpb.SummaryMetadata, maxBlob int64, prog *Progress) *blobJob {
	job := &blobJob{series: s, run: run, tag: s.Tag, step: p.Step, wall: p.WallTime, md: md}
	migrate.ForEachBlob(s, p, func(b []byte) {
		skip := int64(len(b)) > maxBlob
		if skip {
			prog.warn("%s/%s step %d: blob of %d bytes exceeds the server's limit of %d bytes; skipped", run, s.Tag, p.Step, len(b), maxBlob)
			prog.TooLarge.Add(1)
			b = nil
		}
		job.blobs = append(job.blobs, append([]byte(nil), b...))
		job.skip = append(job.skip, skip)
		job.size += len(b)
	})
	return job
}

// blobWriter sends blob sequences.
type blobWriter struct {
	writer       servicepb.TensorBoardWriterServiceClient // nil for a dry run
	experimentID string
	chunk        int // bytes of blob data per WriteBlob message
	send         *sender
	pace         *pacer
	prog         *Progress
	crash        func(CrashPoint)
}

// sendSequence creates the sequence and uploads each of its blobs in order.
func (w *blobWriter) sendSequence(ctx context.Context, job *blobJob) error {
	if w.writer == nil {
		w.count(job)
		return nil
	}
	w.pace.wait(w.prog)
	var seqID string
	err := w.send.call(ctx, func(ctx context.Context) error {
		resp, err := w.writer.GetOrCreateBlobSequence(ctx, &servicepb.GetOrCreateBlobSequenceRequest{
			ExperimentId:        w.experimentID,
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
	w.crash(CrashSequenceCreated)
	for i, b := range job.blobs {
		if job.skip[i] {
			continue
		}
		if err := w.writeBlob(ctx, seqID, int64(i), b); err != nil {
			return fmt.Errorf("blob %d of %s/%s step %d: %w", i, job.run, job.tag, job.step, err)
		}
		w.crash(CrashBlobAcked)
	}
	w.crash(CrashSequenceAcked)
	w.count(job)
	return nil
}

func (w *blobWriter) count(job *blobJob) {
	w.prog.BlobSequences.Add(1)
	for i, b := range job.blobs {
		if job.skip[i] {
			continue
		}
		w.prog.Blobs.Add(1)
		w.prog.BlobBytes.Add(int64(len(b)))
		w.prog.Bytes.Add(int64(len(b)))
	}
}

// writeBlob uploads one blob in chunks. After a broken stream it asks the server how
// much it holds (GetBlobMetadata) and resumes from there when the CRC of that prefix
// matches, or starts over.
func (w *blobWriter) writeBlob(ctx context.Context, seqID string, index int64, data []byte) error {
	chunk := w.chunk
	if chunk <= 0 {
		chunk = int(client.DefaultLimits.MaxBlobRequestSize)
	}
	offset := 0
	resume := false
	return w.send.call(ctx, func(ctx context.Context) error {
		// Every request is paced, not only the sequence's: a rate limit
		// counts each (two per image of a logdir of small images).
		w.pace.wait(w.prog)
		if resume {
			md, err := w.writer.GetBlobMetadata(ctx, &servicepb.GetBlobMetadataRequest{BlobSequenceId: seqID, Index: index})
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
		stream, err := w.writer.WriteBlob(ctx)
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
			w.crash(CrashChunkSent)
			offset = end
		}
		if err := stream.CloseSend(); err != nil {
			return err
		}
		for {
			resp, err := stream.Recv()
			if err == io.EOF {
				// Only an answer that the blob is current proves it was kept: a
				// stream may end without one when the finalizing chunk was lost
				// on its way (the server then keeps a partial blob).
				return status.Error(codes.Unavailable, "the write stream ended before the server finalized the blob")
			}
			if resp.GetBlobState() == servicepb.BlobState_BLOB_STATE_CURRENT {
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

func crc32c(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

var castagnoli = crc32.MakeTable(crc32.Castagnoli)
