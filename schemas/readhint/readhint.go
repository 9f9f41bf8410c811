// Package readhint names what a client of tbhub's read service
// (tensorboard.data.TensorBoardDataProvider) may ask of it beyond
// TensorBoard's protocol. The hints travel as request metadata, so
// TensorBoard's messages stay as they are and a client that sends none
// (TensorBoard itself) gets TensorBoard's answer.
package readhint

import (
	"context"
	"strconv"

	"google.golang.org/grpc/metadata"
)

// MaxStringBytesKey is ReadTensors request metadata: a decimal byte count
// n > 0. Each string element of the answer's tensors then holds at most
// the first n bytes of the stored string, so a client that shows only the
// start of long texts (the text plugin renders 32 KiB of each) does not
// receive them whole. A client that must know whether a text was longer
// asks for one byte more than it shows.
const MaxStringBytesKey = "tbhub-max-string-bytes"

// WithMaxStringBytes returns ctx carrying the MaxStringBytesKey hint to
// the calls made with it.
func WithMaxStringBytes(ctx context.Context, n int) context.Context {
	return metadata.AppendToOutgoingContext(ctx, MaxStringBytesKey, strconv.Itoa(n))
}

// MaxStringBytes returns the MaxStringBytesKey hint of an incoming call;
// 0 (whole strings) if there is none or it is not a positive number.
func MaxStringBytes(ctx context.Context) int {
	v := metadata.ValueFromIncomingContext(ctx, MaxStringBytesKey)
	if len(v) != 1 {
		return 0
	}
	n, err := strconv.Atoi(v[0])
	if err != nil || n <= 0 {
		return 0
	}
	return n
}
