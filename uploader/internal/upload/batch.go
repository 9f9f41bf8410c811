package upload

import (
	"math"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"

	"github.com/tbhub/tbhub/uploader/internal/migrate"
)

// batch packs points into one WriteScalarRequest and one WriteTensorRequest,
// each kept within the server's request size limit. It does no I/O: the caller
// takes a request out when the next point would not fit, and at the end.
type batch struct {
	experimentID       string
	maxScalar, maxTens int // request size limits, bytes

	scalars    pointRequest
	scalarReq  *servicepb.WriteScalarRequest
	scalarTags map[*migrate.Series]*servicepb.WriteScalarRequest_Tag
	tensors    pointRequest
	tensorReq  *servicepb.WriteTensorRequest
}

// pointRequest is a request being packed or sent: the message, the series whose
// points it holds, how many points and its estimated encoded size.
type pointRequest struct {
	msg    proto.Message
	series []*migrate.Series
	points int
	size   int
}

// Request sizes are tracked as TensorBoard's uploader does: each run, tag and point
// costs its encoded size plus the worst-case tag and length prefix.
func fieldCost(n int) int { return n + 11 }

// scalarFits says whether a point of cost bytes for (run, tag) fits the pending
// scalar request (an empty request takes any point).
func (b *batch) scalarFits(run, tag string, cost int) bool {
	return b.scalarReq == nil || b.scalars.size+cost+2*fieldCost(len(run)+len(tag)) <= b.maxScalar
}

// addScalar adds a point to the pending scalar request; md goes with the first
// request that names a tag, as the stock uploader sends it.
func (b *batch) addScalar(run string, s *migrate.Series, md *tbpb.SummaryMetadata, pt *servicepb.ScalarPoint, cost int) {
	if b.scalarReq == nil {
		b.scalarReq = &servicepb.WriteScalarRequest{ExperimentId: b.experimentID}
		b.scalars = pointRequest{msg: b.scalarReq, size: fieldCost(len(b.experimentID))}
		b.scalarTags = map[*migrate.Series]*servicepb.WriteScalarRequest_Tag{}
	}
	t, ok := b.scalarTags[s]
	if !ok {
		req := b.scalarReq
		var r *servicepb.WriteScalarRequest_Run
		if n := len(req.Runs); n > 0 && req.Runs[n-1].Name == run {
			r = req.Runs[n-1]
		} else {
			r = &servicepb.WriteScalarRequest_Run{Name: run}
			req.Runs = append(req.Runs, r)
			b.scalars.size += fieldCost(len(run))
		}
		t = &servicepb.WriteScalarRequest_Tag{Name: s.Tag, Metadata: md}
		r.Tags = append(r.Tags, t)
		b.scalarTags[s] = t
		b.scalars.series = append(b.scalars.series, s)
		b.scalars.size += fieldCost(len(s.Tag) + proto.Size(md))
	}
	t.Points = append(t.Points, pt)
	b.scalars.size += cost
	b.scalars.points++
}

// takeScalars returns the pending scalar request, nil if there is none.
func (b *batch) takeScalars() *pointRequest {
	if b.scalarReq == nil {
		return nil
	}
	r := b.scalars
	b.scalarReq, b.scalarTags, b.scalars = nil, nil, pointRequest{}
	return &r
}

// tensorFits says whether a point of cost bytes for (run, tag) fits the pending
// tensor request.
func (b *batch) tensorFits(run, tag string, cost int) bool {
	return b.tensorReq == nil || b.tensors.size+cost+2*fieldCost(len(run)+len(tag)) <= b.maxTens
}

// addTensor adds a point to the pending tensor request.
func (b *batch) addTensor(run string, s *migrate.Series, md *tbpb.SummaryMetadata, pt *servicepb.TensorPoint, cost int) {
	if b.tensorReq == nil {
		b.tensorReq = &servicepb.WriteTensorRequest{ExperimentId: b.experimentID}
		b.tensors = pointRequest{msg: b.tensorReq, size: fieldCost(len(b.experimentID))}
	}
	req := b.tensorReq
	var r *servicepb.WriteTensorRequest_Run
	if n := len(req.Runs); n > 0 && req.Runs[n-1].Name == run {
		r = req.Runs[n-1]
	} else {
		r = &servicepb.WriteTensorRequest_Run{Name: run}
		req.Runs = append(req.Runs, r)
		b.tensors.size += fieldCost(len(run))
	}
	var tag *servicepb.WriteTensorRequest_Tag
	for i := len(r.Tags) - 1; i >= 0 && tag == nil; i-- {
		if r.Tags[i].Name == s.Tag {
			tag = r.Tags[i]
		}
	}
	if tag == nil {
		tag = &servicepb.WriteTensorRequest_Tag{Name: s.Tag, Metadata: md}
		r.Tags = append(r.Tags, tag)
		b.tensors.series = append(b.tensors.series, s)
		b.tensors.size += fieldCost(len(s.Tag) + proto.Size(md))
	}
	tag.Points = append(tag.Points, pt)
	b.tensors.size += cost
	b.tensors.points++
}

// takeTensors returns the pending tensor request, nil if there is none.
func (b *batch) takeTensors() *pointRequest {
	if b.tensorReq == nil {
		return nil
	}
	r := b.tensors
	b.tensorReq, b.tensors = nil, pointRequest{}
	return &r
}

// scalarPoint builds a scalar point and its cost in a request.
func scalarPoint(p *migrate.Point, v float64) (*servicepb.ScalarPoint, int) {
	pt := &servicepb.ScalarPoint{Step: p.Step, WallTime: timestamp(p.WallTime), Value: v}
	return pt, fieldCost(scalarPointSize(pt))
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
