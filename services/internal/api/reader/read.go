package reader

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	datapb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/data"
	"github.com/tbhub/tbhub/schemas/readhint"
	"github.com/tbhub/tbhub/services/internal/policy/rpcerr"
	"github.com/tbhub/tbhub/services/internal/storage/blob"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// readQuery checks a Read* request and returns the experiment and the
// store query it asks for.
func (s *Server) readQuery(ctx context.Context, eid string, pf *datapb.PluginFilter, rtf *datapb.RunTagFilter, ds *datapb.Downsample) (store.Experiment, store.Query, error) {
	e, err := s.experiment(ctx, eid)
	if err != nil {
		return e, store.Query{}, err
	}
	f, err := seriesFilter(pf, rtf)
	if err != nil {
		return e, store.Query{}, err
	}
	if ds == nil {
		return e, store.Query{}, rpcerr.New(codes.InvalidArgument, "downsample is required (downsample.num_points >= 0)")
	}
	if ds.GetNumPoints() < 0 {
		return e, store.Query{}, rpcerr.New(codes.InvalidArgument, "downsample.num_points is %d; must be >= 0", ds.GetNumPoints())
	}
	return e, store.Query{Filter: f, MaxPoints: ds.GetNumPoints()}, nil
}

// budget counts what one answer holds and refuses to grow it past the
// configured bounds.
type budget struct {
	points, maxPoints int64
	bytes, maxBytes   int64
}

func (b *budget) add(points, bytes int64) error {
	b.points += points
	b.bytes += bytes
	if b.points > b.maxPoints {
		return rpcerr.New(codes.OutOfRange,
			"the answer would hold more than %d points (series × downsample.num_points); narrow the run/tag filter or lower num_points", b.maxPoints)
	}
	if b.maxBytes > 0 && b.bytes > b.maxBytes {
		return rpcerr.New(codes.OutOfRange,
			"the answer would hold more than %d bytes of tensors; narrow the run/tag filter or lower num_points", b.maxBytes)
	}
	return nil
}

// MinStepHeader is readhint.MinStepKey: with it, ReadScalars reads tails.
const MinStepHeader = readhint.MinStepKey

// errTailOverLimit stops a tail read at the first series over its limit.
var errTailOverLimit = rpcerr.New(codes.OutOfRange, "a series has more points from %s than downsample.num_points", MinStepHeader)

// tailStep returns the step of the call's MinStepHeader, if it has one.
func tailStep(ctx context.Context) (int64, bool, error) {
	step, ok, err := readhint.MinStep(ctx)
	if err != nil {
		return 0, false, rpcerr.New(codes.InvalidArgument, "%v", err)
	}
	return step, ok, nil
}

// ReadScalars returns downsampled scalar points, a tail of each series
// (MinStepHeader), or each series bucketed (readhint.BucketsKey).
func (s *Server) ReadScalars(ctx context.Context, req *datapb.ReadScalarsRequest) (*datapb.ReadScalarsResponse, error) {
	e, q, err := s.readQuery(ctx, req.GetExperimentId(), req.GetPluginFilter(), req.GetRunTagFilter(), req.GetDownsample())
	if err != nil {
		return nil, err
	}
	buckets, lo, hi, bucketed, err := readhint.Buckets(ctx)
	if err != nil {
		return nil, rpcerr.New(codes.InvalidArgument, "%v", err)
	}
	minStep, tail, err := tailStep(ctx)
	if err != nil {
		return nil, err
	}
	limit := q.MaxPoints
	if bucketed {
		// The min-step hint bounds the window of buckets: no tail.
		q.Buckets, q.MinStep, q.MaxStep, tail = buckets, lo, hi, false
	} else if tail {
		// Streamed in step order from minStep: both stores read such a
		// window by step (AllPoints never samples).
		q.MinStep, q.MaxPoints = &minStep, store.AllPoints
	}
	resp := &datapb.ReadScalarsResponse{}
	if q.Filter.Empty() {
		return resp, nil
	}
	b := budget{maxPoints: s.cfg.MaxResponsePoints}
	var run *datapb.ReadScalarsResponse_RunEntry
	var tag *datapb.ReadScalarsResponse_TagEntry
	err = s.st.ReadScalars(ctx, e.ID, q, func(ts *store.TimeSeries, points []store.ScalarPoint) error {
		if err := b.add(int64(len(points)), 0); err != nil {
			return err
		}
		if run == nil || run.RunName != ts.Run {
			run = &datapb.ReadScalarsResponse_RunEntry{RunName: ts.Run}
			resp.Runs = append(resp.Runs, run)
			tag = nil
		}
		if tag == nil || tag.TagName != ts.Tag {
			tag = &datapb.ReadScalarsResponse_TagEntry{TagName: ts.Tag, Data: &datapb.ScalarData{}}
			run.Tags = append(run.Tags, tag)
		}
		d := tag.Data
		d.Step = slices.Grow(d.Step, len(points))
		d.WallTime = slices.Grow(d.WallTime, len(points))
		d.Value = slices.Grow(d.Value, len(points))
		for _, p := range points {
			d.Step = append(d.Step, p.Step)
			d.WallTime = append(d.WallTime, p.WallTime)
			d.Value = append(d.Value, float32(p.Value))
		}
		if tail && int64(len(d.Step)) > limit {
			return errTailOverLimit // the store stops reading
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// ReadTensors returns downsampled tensor points. With the
// readhint.MaxStringBytesKey hint, each string of them holds at most that
// many bytes, cut from the stored tensor without reading the rest.
func (s *Server) ReadTensors(ctx context.Context, req *datapb.ReadTensorsRequest) (*datapb.ReadTensorsResponse, error) {
	maxString := readhint.MaxStringBytes(ctx)
	e, q, err := s.readQuery(ctx, req.GetExperimentId(), req.GetPluginFilter(), req.GetRunTagFilter(), req.GetDownsample())
	if err != nil {
		return nil, err
	}
	resp := &datapb.ReadTensorsResponse{}
	if q.Filter.Empty() {
		return resp, nil
	}
	b := budget{maxPoints: s.cfg.MaxResponsePoints, maxBytes: s.cfg.MaxResponseTensorBytes}
	var run *datapb.ReadTensorsResponse_RunEntry
	var tag *datapb.ReadTensorsResponse_TagEntry
	err = s.st.ReadTensors(ctx, e.ID, q, func(ts *store.TimeSeries, points []store.TensorPoint) error {
		var n int64
		for _, p := range points {
			n += int64(len(p.Tensor))
		}
		if err := b.add(int64(len(points)), n); err != nil {
			return err
		}
		if run == nil || run.RunName != ts.Run {
			run = &datapb.ReadTensorsResponse_RunEntry{RunName: ts.Run}
			resp.Runs = append(resp.Runs, run)
			tag = nil
		}
		if tag == nil || tag.TagName != ts.Tag {
			tag = &datapb.ReadTensorsResponse_TagEntry{TagName: ts.Tag, Data: &datapb.TensorData{}}
			run.Tags = append(run.Tags, tag)
		}
		d := tag.Data
		for _, p := range points {
			t, err := unmarshalTensor(p.Tensor, maxString)
			if err != nil {
				return fmt.Errorf("run %q tag %q step %d: stored tensor: %w", ts.Run, ts.Tag, p.Step, err)
			}
			d.Step = append(d.Step, p.Step)
			d.WallTime = append(d.WallTime, p.WallTime)
			d.Value = append(d.Value, t)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// ReadBlobSequences returns downsampled blob sequence points as blob keys.
// A point is shown once every blob of it is stored completely: a point
// whose upload is still under way is left out until it is whole.
func (s *Server) ReadBlobSequences(ctx context.Context, req *datapb.ReadBlobSequencesRequest) (*datapb.ReadBlobSequencesResponse, error) {
	e, q, err := s.readQuery(ctx, req.GetExperimentId(), req.GetPluginFilter(), req.GetRunTagFilter(), req.GetDownsample())
	if err != nil {
		return nil, err
	}
	resp := &datapb.ReadBlobSequencesResponse{}
	if q.Filter.Empty() {
		return resp, nil
	}
	b := budget{maxPoints: s.cfg.MaxResponsePoints}
	var run *datapb.ReadBlobSequencesResponse_RunEntry
	var tag *datapb.ReadBlobSequencesResponse_TagEntry
	err = s.st.ReadBlobSequences(ctx, e.ID, q, func(ts *store.TimeSeries, points []store.BlobSequencePoint) error {
		if err := b.add(int64(len(points)), 0); err != nil {
			return err
		}
		if run == nil || run.RunName != ts.Run {
			run = &datapb.ReadBlobSequencesResponse_RunEntry{RunName: ts.Run}
			resp.Runs = append(resp.Runs, run)
			tag = nil
		}
		if tag == nil || tag.TagName != ts.Tag {
			tag = &datapb.ReadBlobSequencesResponse_TagEntry{TagName: ts.Tag, Data: &datapb.BlobSequenceData{}}
			run.Tags = append(run.Tags, tag)
		}
		d := tag.Data
		for _, p := range points {
			if !complete(p) {
				continue
			}
			seq := &datapb.BlobReferenceSequence{BlobRefs: make([]*datapb.BlobReference, 0, p.Length)}
			for i := range p.Length {
				ref := store.BlobRef{Run: ts.Run, Tag: ts.Tag, Step: p.Step, Index: i}
				seq.BlobRefs = append(seq.BlobRefs, &datapb.BlobReference{BlobKey: s.keys.Encode(e.ID, ref, p.Blobs[i].CRC32C)})
			}
			d.Step = append(d.Step, p.Step)
			d.WallTime = append(d.WallTime, p.WallTime)
			d.Values = append(d.Values, seq)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// complete reports whether every slot of p holds a current blob.
func complete(p store.BlobSequencePoint) bool {
	if int64(len(p.Blobs)) != p.Length {
		return false
	}
	for i, b := range p.Blobs {
		if b.Index != int64(i) || b.State != store.BlobStateCurrent {
			return false
		}
	}
	return true
}

// ReadBlob streams one blob in chunks of Config.BlobChunkBytes. The key
// must have been issued by this service (any replica sharing the secret)
// for the experiment the guard authorized.
func (s *Server) ReadBlob(req *datapb.ReadBlobRequest, stream grpc.ServerStreamingServer[datapb.ReadBlobResponse]) error {
	ctx := stream.Context()
	eid, ref, crc, err := s.keys.Decode(req.GetBlobKey())
	if err != nil {
		return rpcerr.New(codes.InvalidArgument, "blob_key is not a key this service issued")
	}
	if _, err := s.experiment(ctx, eid); err != nil {
		return err
	}
	row, err := s.st.GetBlob(ctx, eid, ref)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return rpcerr.New(codes.NotFound, "blob not found; it may have been replaced or deleted")
		}
		return err
	}
	if row.State != store.BlobStateCurrent {
		return rpcerr.New(codes.NotFound, "blob not found: its upload has not finished")
	}
	if row.CRC32C != crc {
		return rpcerr.New(codes.NotFound, "blob not found: it was replaced after this key was issued; list it again")
	}
	// Checked against the row: an object replaced under it fails.
	r, err := blob.RowReader(ctx, s.blobs, row.ObjectKey, row.Size, row.CRC32C)
	if err != nil {
		if errors.Is(err, blob.ErrNotFound) {
			return rpcerr.New(codes.NotFound, "blob not found; it may have been replaced or deleted")
		}
		return err
	}
	defer r.Close()
	// Small objects need no chunk-sized buffer; +1 lets one read see EOF.
	size := int(min(int64(s.cfg.BlobChunkBytes), max(row.Size, 0)+1))
	return streamChunks(r, size, func(chunk []byte) error {
		return stream.Send(&datapb.ReadBlobResponse{Data: chunk})
	})
}

// streamChunks reads r to its end and passes it on in chunks of at most
// size bytes; an empty object is sent as one empty chunk, so that the
// client always receives a message. Each chunk is a fresh buffer: gRPC may
// still hold a sent message after Send returns.
func streamChunks(r io.Reader, size int, send func([]byte) error) error {
	sent := false
	for {
		buf := make([]byte, size)
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			if err := send(buf[:n]); err != nil {
				return err
			}
			sent = true
		}
		switch {
		case err == io.EOF || err == io.ErrUnexpectedEOF:
			if !sent {
				return send(nil)
			}
			return nil
		case err != nil:
			return err
		}
	}
}

// stringValField is TensorProto.string_val's field number.
var stringValField = (&tbpb.TensorProto{}).ProtoReflect().Descriptor().Fields().ByName("string_val").Number()

// unmarshalTensor unmarshals a stored TensorProto; with maxString > 0 it
// keeps only the first maxString bytes of each string element, copying
// those alone (proto.Unmarshal would copy every string whole first).
func unmarshalTensor(b []byte, maxString int) (*tbpb.TensorProto, error) {
	t := &tbpb.TensorProto{}
	if maxString <= 0 {
		return t, proto.Unmarshal(b, t)
	}
	var rest []byte // b without its string_val fields
	var strs [][]byte
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return nil, protowire.ParseError(m)
		}
		if num == stringValField && typ == protowire.BytesType {
			v, _ := protowire.ConsumeBytes(b[n:])
			strs = append(strs, bytes.Clone(v[:min(len(v), maxString)]))
		} else {
			rest = append(rest, b[:n+m]...)
		}
		b = b[n+m:]
	}
	if err := proto.Unmarshal(rest, t); err != nil {
		return nil, err
	}
	t.StringVal = strs
	return t, nil
}
