// Package view lets a stock TensorBoard show a hosted experiment: it serves
// TensorBoard's DataProvider gRPC API on loopback, bound to one experiment, and
// forwards every call to the tbhub read service with the user's credentials.
//
// Stock TensorBoard (`tensorboard --grpc_data_provider=localhost:PORT`) sends no
// credentials and names the experiment inconsistently ("" from the legacy
// dashboards, "defaultExperimentId" from the Angular ones), so the proxy sets the
// experiment on every request and the connection to the server carries the token.
// Messages are forwarded as bytes; only the experiment_id field is rewritten.
//
// Any local process can connect to the proxy (another user of a shared machine
// too), and what it forwards is read with the user's token. So the proxy serves
// its one experiment and nothing else: a request naming another experiment, a
// blob key issued for another experiment, a request it cannot read and a method
// it does not know are refused without reaching the server.
package view

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/local"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/tbhub/tbhub/schemas/experimentid"
)

const service = "/tensorboard.data.TensorBoardDataProvider/"

// readBlob is the one method whose request names no experiment_id: its field 1
// is a blob key.
const readBlob = "ReadBlob"

// experimentMethods are the other methods forwarded; each request carries the
// experiment in field 1 (experiment_id).
var experimentMethods = map[string]bool{
	"GetExperiment": true, "ListPlugins": true, "ListRuns": true,
	"ListScalars": true, "ReadScalars": true, "ListTensors": true, "ReadTensors": true,
	"ListBlobSequences": true, "ReadBlobSequences": true,
}

var (
	// ErrOtherExperiment refuses a request for another experiment than the
	// proxy's.
	ErrOtherExperiment = errors.New("tbup view serves one experiment only")
	// ErrMalformed refuses a request that is not a readable message.
	ErrMalformed = errors.New("malformed request")
)

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
	name, isData := strings.CutPrefix(method, service)
	if !ok || !isData || (name != readBlob && !experimentMethods[name]) {
		return status.Errorf(codes.Unimplemented, "tbup view serves only the methods of %s", service)
	}
	var req frame
	if err := in.RecvMsg(&req); err != nil {
		return err
	}
	var err error
	if name == readBlob {
		err = CheckBlobKey(req.b, p.experiment)
	} else {
		req.b, err = BindExperiment(req.b, p.experiment)
	}
	switch {
	case errors.Is(err, ErrOtherExperiment):
		return status.Errorf(codes.PermissionDenied, "%v: %s", err, p.experiment)
	case err != nil:
		return status.Errorf(codes.InvalidArgument, "%s: %v", name, err)
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

// BindExperiment sets field 1 (experiment_id) of a serialized DataProvider
// request to eid when it is empty, TensorBoard's placeholder
// "defaultExperimentId" or eid itself. A request naming any other experiment
// gets ErrOtherExperiment, one that cannot be read ErrMalformed: the proxy
// answers for its own experiment only.
func BindExperiment(msg []byte, eid string) ([]byte, error) {
	current, rest, err := splitFieldOne(msg)
	if err != nil {
		return nil, err
	}
	if current != "" && current != "defaultExperimentId" && current != eid {
		return nil, fmt.Errorf("%w: the request names %q", ErrOtherExperiment, current)
	}
	out := protowire.AppendTag(make([]byte, 0, len(eid)+2+len(rest)), 1, protowire.BytesType)
	out = protowire.AppendString(out, eid)
	return append(out, rest...), nil
}

// CheckBlobKey refuses a serialized ReadBlobRequest whose blob key (field 1)
// was not issued for experiment eid. A key starts with the experiment it was
// issued for and a dot (services/internal/storage/store/blobids.go and the read
// service's blobkey.go), as the server's tenancy check reads it; experiment
// IDs are base64url, so they hold no dot. The rest of the key is the server's
// to check.
func CheckBlobKey(msg []byte, eid string) error {
	key, _, err := splitFieldOne(msg)
	if err != nil {
		return err
	}
	if owner, ok := experimentid.OfBlobKey(key); !ok || owner != eid {
		return fmt.Errorf("%w: blob key %q is not one of its keys", ErrOtherExperiment, key)
	}
	return nil
}

// splitFieldOne returns the string in field 1 of a serialized message (the
// last occurrence, as protobuf decoding keeps it) and the message's other
// fields.
func splitFieldOne(msg []byte) (string, []byte, error) {
	value := ""
	rest := make([]byte, 0, len(msg))
	for b := msg; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return "", nil, ErrMalformed
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return "", nil, ErrMalformed
		}
		if num == 1 {
			if typ != protowire.BytesType {
				return "", nil, fmt.Errorf("%w: field 1 is not a string", ErrMalformed)
			}
			v, _ := protowire.ConsumeBytes(b[n:])
			value = string(v)
		} else {
			rest = append(rest, b[:n+m]...)
		}
		b = b[n+m:]
	}
	return value, rest, nil
}
