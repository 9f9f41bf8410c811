// Package view lets a stock TensorBoard show a hosted experiment: it serves
// TensorBoard's DataProvider gRPC API on loopback, bound to one experiment, and
// forwards every call to the tbhub read service with the user's credentials.
//
// Stock TensorBoard (`tensorboard --grpc_data_provider=localhost:PORT`) sends no
// credentials and names the experiment inconsistently ("" from the legacy
// dashboards, "defaultExperimentId" from the Angular ones), so the proxy sets the
// experiment on every request and the connection to the server carries the token.
// Messages are forwarded as bytes; only the experiment_id field is rewritten.
package view

import (
	"context"
	"errors"
	"io"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/local"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
)

const service = "/tensorboard.data.TensorBoardDataProvider/"

// frame is a message kept as its serialized bytes.
type frame struct{ b []byte }

// rawCodec moves frames without parsing them.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) {
	f, ok := v.(*frame)
	if !ok {
		return nil, errors.New("view: not a raw frame")
	}
	return f.b, nil
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	f, ok := v.(*frame)
	if !ok {
		return errors.New("view: not a raw frame")
	}
	f.b = append(f.b[:0], data...)
	return nil
}

func (rawCodec) Name() string { return "proto" } // the wire format is protobuf either way

var _ encoding.Codec = rawCodec{}

// Proxy forwards DataProvider calls for one experiment.
type Proxy struct {
	remote     *grpc.ClientConn
	experiment string
}

// New forwards to remote (a connection carrying the user's credentials) for experiment.
func New(remote *grpc.ClientConn, experiment string) *Proxy {
	return &Proxy{remote: remote, experiment: experiment}
}

// Server is a gRPC server that accepts loopback connections only (TensorBoard's
// default "local" channel credentials) and forwards to the read service.
func (p *Proxy) Server() *grpc.Server {
	return grpc.NewServer(
		grpc.Creds(local.NewCredentials()),
		grpc.ForceServerCodec(rawCodec{}),
		grpc.UnknownServiceHandler(p.forward),
	)
}

func (p *Proxy) forward(_ any, in grpc.ServerStream) error {
	method, ok := grpc.MethodFromServerStream(in)
	if !ok || !strings.HasPrefix(method, service) {
		return status.Errorf(codes.Unimplemented, "tbup view serves only %s*", service)
	}
	var req frame
	if err := in.RecvMsg(&req); err != nil {
		return err
	}
	if method != service+"ReadBlob" {
		req.b = BindExperiment(req.b, p.experiment)
	}
	ctx, cancel := context.WithCancel(in.Context())
	defer cancel()
	out, err := p.remote.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, method, grpc.ForceCodec(rawCodec{}))
	if err != nil {
		return err
	}
	if err := out.SendMsg(&req); err != nil {
		return err
	}
	if err := out.CloseSend(); err != nil {
		return err
	}
	for {
		var resp frame
		err := out.RecvMsg(&resp)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err // the server's status, passed on as it is
		}
		if err := in.SendMsg(&resp); err != nil {
			return err
		}
	}
}

// BindExperiment rewrites field 1 (experiment_id) of a serialized DataProvider
// request to eid when it is empty or TensorBoard's placeholder "defaultExperimentId";
// any other experiment is left alone, and the server decides whether the caller may
// read it.
func BindExperiment(msg []byte, eid string) []byte {
	current := ""
	rest := make([]byte, 0, len(msg)+len(eid)+2)
	for b := msg; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return msg // not ours to fix; the server will reject it
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return msg
		}
		if num == 1 && typ == protowire.BytesType {
			v, _ := protowire.ConsumeBytes(b[n:])
			current = string(v)
		} else {
			rest = append(rest, b[:n+m]...)
		}
		b = b[n+m:]
	}
	if current != "" && current != "defaultExperimentId" {
		return msg
	}
	out := protowire.AppendTag(nil, 1, protowire.BytesType)
	out = protowire.AppendString(out, eid)
	return append(out, rest...)
}
