package upload

// CrashPoint names a step in the life of a point or a blob at which a test may make
// the process die (Config.Crash; tbup's TBUP_CRASH_AT). Between any two of them the
// uploader must survive a kill -9: whatever the state file records as sent, the
// server holds, and a rerun sends the rest. docs/delivery.md walks through them.
type CrashPoint string

const (
	// CrashPointsAcked: the server acknowledged a WriteScalar or WriteTensor request;
	// the uploader has not counted it yet.
	CrashPointsAcked CrashPoint = "points-acked"
	// CrashSequenceCreated: GetOrCreateBlobSequence answered; none of the sequence's
	// blobs was written yet.
	CrashSequenceCreated CrashPoint = "sequence-created"
	// CrashChunkSent: a WriteBlob chunk was sent (the last one with finalize_object);
	// the server's answer has not arrived. The server may hold the chunk or not.
	CrashChunkSent CrashPoint = "chunk-sent"
	// CrashBlobAcked: the server answered a blob's finalized stream; the sequence's
	// next blob was not started.
	CrashBlobAcked CrashPoint = "blob-acked"
	// CrashSequenceAcked: every blob of a sequence was acknowledged; the uploader
	// has not counted the sequence yet.
	CrashSequenceAcked CrashPoint = "sequence-acked"
	// CrashStateSaving: a segment is fully acknowledged; its offsets are about to be
	// written to the state file.
	CrashStateSaving CrashPoint = "state-saving"
	// CrashStateSaved: the state file was just replaced.
	CrashStateSaved CrashPoint = "state-saved"
)

// CrashPoints lists every crash point, in the order of a blob's and a segment's life.
var CrashPoints = []CrashPoint{
	CrashPointsAcked, CrashSequenceCreated, CrashChunkSent, CrashBlobAcked, CrashSequenceAcked, CrashStateSaving, CrashStateSaved,
}
