// Package export serves tensorboard.service.TensorBoardExporterService:
// listing the caller's experiments (StreamExperiments) and the lossless
// export of an experiment's points (StreamExperimentData) and blobs
// (StreamBlobData), which `tbup list` and `tbup export` call. It only
// reads: the store through store.Reader, blob contents through blob.Store.
//
// Every call has passed tenancy.Guard: the principal and, for calls on an
// experiment, the authorized experiment are in the context. The service
// reads the store's current state: read_timestamp is accepted and ignored
// (the embedded store has no snapshots by time).
package export

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
	"github.com/tbhub/tbhub/services/internal/policy/rpcerr"
	"github.com/tbhub/tbhub/services/internal/policy/tenancy"
	"github.com/tbhub/tbhub/services/internal/storage/blob"
	"github.com/tbhub/tbhub/services/internal/storage/store"
	"github.com/tbhub/tbhub/services/internal/storage/walltime"
)

// Server is the exporter service over a store and its blobs.
type Server struct {
	servicepb.UnimplementedTensorBoardExporterServiceServer
	st    store.Reader
	blobs blob.Store
}

// New returns the exporter service over st and blobs.
func New(st store.Reader, blobs blob.Store) *Server {
	return &Server{st: st, blobs: blobs}
}

// Register registers the exporter service.
func (x *Server) Register(r grpc.ServiceRegistrar) {
	servicepb.RegisterTensorBoardExporterServiceServer(r, x)
}

const (
	experimentsPerResponse = 100
	// exportPointsPerResponse and exportBytesPerResponse bound one
	// StreamExperimentData message well below gRPC's 4 MiB default.
	exportPointsPerResponse = 1000
	exportBytesPerResponse  = 1 << 20
	exportBlobChunk         = 1 << 20
)

// experimentProto converts e, keeping the fields mask selects (all if
// mask is nil).
func experimentProto(e *store.Experiment, mask *servicepb.ExperimentMask) *servicepb.Experiment {
	all := mask == nil
	out := &servicepb.Experiment{ExperimentId: e.ID}
	if all || mask.GetName() {
		out.Name = e.Name
	}
	if all || mask.GetDescription() {
		out.Description = e.Description
	}
	if all || mask.GetCreateTime() {
		out.CreateTime = timestamppb.New(e.CreateTime)
	}
	if all || mask.GetUpdateTime() {
		out.UpdateTime = timestamppb.New(e.UpdateTime)
	}
	if all || mask.GetNumScalars() {
		out.NumScalars = e.NumScalars
	}
	if all || mask.GetNumRuns() {
		out.NumRuns = e.NumRuns
	}
	if all || mask.GetNumTags() {
		out.NumTags = e.NumTags
	}
	if all || mask.GetTotalTensorBytes() {
		out.TotalTensorBytes = e.TotalTensorBytes
	}
	if all || mask.GetTotalBlobBytes() {
		out.TotalBlobBytes = e.TotalBlobBytes
	}
	if all || mask.GetOwner() {
		out.Owner = e.Owner
	}
	return out
}

// StreamExperiments lists the caller's own experiments. user_id may name
// only the caller.
func (x *Server) StreamExperiments(req *servicepb.StreamExperimentsRequest, stream servicepb.TensorBoardExporterService_StreamExperimentsServer) error {
	ctx := stream.Context()
	p, err := tenancy.Caller(ctx)
	if err != nil {
		return err
	}
	if u := req.GetUserId(); u != "" && u != p.UserID {
		return rpcerr.New(codes.PermissionDenied, "experiments of other users cannot be listed")
	}
	limit := req.GetLimit()
	if limit <= 0 {
		limit = math.MaxInt64
	}
	mask := req.GetExperimentsMask()
	var batch []*servicepb.Experiment
	var ids []string
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		resp := &servicepb.StreamExperimentsResponse{Experiments: batch}
		if mask == nil {
			//lint:ignore SA1019 TensorBoard's exporter still reads ids from clients that predate masks
			resp.ExperimentIds = ids
		}
		batch, ids = nil, nil
		return stream.Send(resp)
	}
	var n int64
	errLimit := errors.New("limit reached")
	err = x.st.ListExperiments(ctx, store.ExperimentFilter{Owner: p.UserID}, func(e store.Experiment) error {
		if n == limit {
			return errLimit
		}
		n++
		if mask == nil {
			batch = append(batch, &servicepb.Experiment{ExperimentId: e.ID})
		} else {
			batch = append(batch, experimentProto(&e, mask))
		}
		ids = append(ids, e.ID)
		if len(batch) == experimentsPerResponse {
			return flush()
		}
		return nil
	})
	if err != nil && !errors.Is(err, errLimit) {
		return err
	}
	return flush()
}

// exportSender turns visitor callbacks into StreamExperimentDataResponses,
// one (run, tag) per message, split by points and bytes.
type exportSender struct {
	stream servicepb.TensorBoardExporterService_StreamExperimentDataServer
	eid    string
}

func (x *exportSender) metadata(ts *store.TimeSeries) (*tbpb.SummaryMetadata, error) {
	md := &tbpb.SummaryMetadata{}
	if err := proto.Unmarshal(ts.SummaryMetadata, md); err != nil {
		return nil, fmt.Errorf("export: stored metadata of (%q, %q): %w", ts.Run, ts.Tag, err)
	}
	return md, nil
}

func (x *exportSender) scalars(ts *store.TimeSeries, points []store.ScalarPoint) error {
	md, err := x.metadata(ts)
	if err != nil {
		return err
	}
	for len(points) > 0 {
		n := min(len(points), exportPointsPerResponse)
		sp := &servicepb.StreamExperimentDataResponse_ScalarPoints{}
		for _, p := range points[:n] {
			sp.Steps = append(sp.Steps, p.Step)
			sp.WallTimes = append(sp.WallTimes, walltime.Timestamp(p.WallTime))
			sp.Values = append(sp.Values, p.Value)
		}
		points = points[n:]
		if err := x.stream.Send(&servicepb.StreamExperimentDataResponse{TagName: ts.Tag, RunName: ts.Run, TagMetadata: md,
			Data: &servicepb.StreamExperimentDataResponse_Points{Points: sp}}); err != nil {
			return err
		}
	}
	return nil
}

func (x *exportSender) tensors(ts *store.TimeSeries, points []store.TensorPoint) error {
	md, err := x.metadata(ts)
	if err != nil {
		return err
	}
	for len(points) > 0 {
		tp := &servicepb.StreamExperimentDataResponse_TensorPoints{}
		bytes := 0
		n := 0
		for _, p := range points {
			if n > 0 && (n == exportPointsPerResponse || bytes+len(p.Tensor) > exportBytesPerResponse) {
				break
			}
			v := &tbpb.TensorProto{}
			if err := proto.Unmarshal(p.Tensor, v); err != nil {
				return fmt.Errorf("export: stored tensor (%q, %q, %d): %w", ts.Run, ts.Tag, p.Step, err)
			}
			tp.Steps = append(tp.Steps, p.Step)
			tp.WallTimes = append(tp.WallTimes, walltime.Timestamp(p.WallTime))
			tp.Values = append(tp.Values, v)
			bytes += len(p.Tensor)
			n++
		}
		points = points[n:]
		if err := x.stream.Send(&servicepb.StreamExperimentDataResponse{TagName: ts.Tag, RunName: ts.Run, TagMetadata: md,
			Data: &servicepb.StreamExperimentDataResponse_Tensors{Tensors: tp}}); err != nil {
			return err
		}
	}
	return nil
}

func (x *exportSender) blobSequences(ts *store.TimeSeries, points []store.BlobSequencePoint) error {
	md, err := x.metadata(ts)
	if err != nil {
		return err
	}
	for len(points) > 0 {
		n := min(len(points), exportPointsPerResponse)
		bp := &servicepb.StreamExperimentDataResponse_BlobSequencePoints{}
		for _, p := range points[:n] {
			seq := &servicepb.BlobSequence{Entries: make([]*servicepb.BlobSequenceEntry, p.Length)}
			for i := range seq.Entries {
				seq.Entries[i] = &servicepb.BlobSequenceEntry{}
			}
			for _, b := range p.Blobs {
				if b.Index >= 0 && b.Index < p.Length {
					seq.Entries[b.Index].Blob = &servicepb.Blob{
						BlobId: store.BlobID(x.eid, store.BlobRef{Run: ts.Run, Tag: ts.Tag, Step: p.Step, Index: b.Index}),
						State:  servicepb.BlobState(b.State),
					}
				}
			}
			bp.Steps = append(bp.Steps, p.Step)
			bp.WallTimes = append(bp.WallTimes, walltime.Timestamp(p.WallTime))
			bp.Values = append(bp.Values, seq)
		}
		points = points[n:]
		if err := x.stream.Send(&servicepb.StreamExperimentDataResponse{TagName: ts.Tag, RunName: ts.Run, TagMetadata: md,
			Data: &servicepb.StreamExperimentDataResponse_BlobSequences{BlobSequences: bp}}); err != nil {
			return err
		}
	}
	return nil
}

// StreamExperimentData sends every point of the experiment: scalars, then
// tensors, then blob sequences, each in (run, tag) and step order.
func (x *Server) StreamExperimentData(req *servicepb.StreamExperimentDataRequest, stream servicepb.TensorBoardExporterService_StreamExperimentDataServer) error {
	ctx := stream.Context()
	e, err := tenancy.AuthorizedExperiment(ctx)
	if err != nil {
		return err
	}
	snd := &exportSender{stream: stream, eid: e.ID}
	all := store.Query{MaxPoints: store.AllPoints}
	if err := x.st.ReadScalars(ctx, e.ID, all, snd.scalars); err != nil {
		return err
	}
	if err := x.st.ReadTensors(ctx, e.ID, all, snd.tensors); err != nil {
		return err
	}
	return x.st.ReadBlobSequences(ctx, e.ID, all, snd.blobSequences)
}

// StreamBlobData sends one current blob in chunks, the last one with the
// blob's CRC32C.
func (x *Server) StreamBlobData(req *servicepb.StreamBlobDataRequest, stream servicepb.TensorBoardExporterService_StreamBlobDataServer) error {
	ctx := stream.Context()
	e, err := tenancy.AuthorizedExperiment(ctx)
	if err != nil {
		return err
	}
	eid, ref, err := store.ParseBlobID(req.GetBlobId())
	if err != nil || eid != e.ID {
		return rpcerr.New(codes.NotFound, "blob not found")
	}
	b, err := x.st.GetBlob(ctx, eid, ref)
	if errors.Is(err, store.ErrNotFound) || (err == nil && b.State != store.BlobStateCurrent) {
		return rpcerr.New(codes.NotFound, "blob not found")
	}
	if err != nil {
		return err
	}
	return sendBlob(ctx, x.blobs, b, stream)
}

func sendBlob(ctx context.Context, blobs blob.Store, b store.Blob, stream servicepb.TensorBoardExporterService_StreamBlobDataServer) error {
	// Checked against the row: an object replaced under it fails.
	r, err := blob.RowReader(ctx, blobs, b.ObjectKey, b.Size, b.CRC32C)
	if err != nil {
		return err
	}
	defer r.Close()
	buf := make([]byte, exportBlobChunk)
	var offset int64
	for {
		n, err := io.ReadFull(r, buf)
		last := err == io.EOF || err == io.ErrUnexpectedEOF
		if err != nil && !last {
			return err
		}
		resp := &servicepb.StreamBlobDataResponse{Data: buf[:n], Offset: offset}
		if last || offset+int64(n) == b.Size {
			// Confirm the end: a full read checks the CRC32C at EOF.
			if !last {
				if _, err := r.Read(make([]byte, 1)); err != io.EOF {
					if err == nil {
						err = fmt.Errorf("export: blob %s is longer than its row", b.ObjectKey)
					}
					return err
				}
			}
			resp.FinalChunk, resp.FinalCrc32C = true, b.CRC32C
		}
		if err := stream.Send(resp); err != nil {
			return err
		}
		offset += int64(n)
		if resp.FinalChunk {
			return nil
		}
	}
}
