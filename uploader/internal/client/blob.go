package client

import (
	"context"
	"errors"
	"fmt"
	"io"

	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
)

// StreamBlob copies blob id (a blob_id of StreamExperimentData) from the
// server to w, checking that the chunks arrive in order, and returns its size.
func StreamBlob(ctx context.Context, api servicepb.TensorBoardExporterServiceClient, id string, w io.Writer) (int64, error) {
	stream, err := api.StreamBlobData(ctx, &servicepb.StreamBlobDataRequest{BlobId: id})
	if err != nil {
		return 0, errors.New(Describe(err))
	}
	var off int64
	for {
		chunk, err := stream.Recv()
		if err == io.EOF {
			return off, nil
		}
		if err != nil {
			return off, fmt.Errorf("blob %s: %s", id, Describe(err))
		}
		if chunk.GetOffset() != off {
			return off, fmt.Errorf("blob %s: chunk at offset %d, expected %d", id, chunk.GetOffset(), off)
		}
		n, err := w.Write(chunk.GetData())
		off += int64(n)
		if err != nil {
			return off, err
		}
	}
}
