// Package readhint names what a client of tbhub's read service
// (tensorboard.data.TensorBoardDataProvider) may ask of it beyond
// TensorBoard's protocol. The hints travel as request metadata, so
// TensorBoard's messages stay as they are and a client that sends none
// (TensorBoard itself) gets TensorBoard's answer.
package readhint

import (
	"context"
	"fmt"
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

// MinStepKey is ReadScalars request metadata: a decimal step S. The call
// then reads a tail instead of a downsampled series: every point of each
// selected series from step S on (S included), in step order, at full
// resolution, through the store's step index (the points before S are
// never visited). downsample.num_points is then a limit, not a sample
// size: a series with more points than that from S on fails the call with
// OUT_OF_RANGE (read it downsampled instead). The web UI's live scalar
// cards read what is new this way (frontend-api's scalars_multirun
// "after" parameter).
const MinStepKey = "tbhub-min-step"

// WithMinStep returns ctx carrying the MinStepKey hint to the calls made
// with it.
func WithMinStep(ctx context.Context, step int64) context.Context {
	return metadata.AppendToOutgoingContext(ctx, MinStepKey, strconv.FormatInt(step, 10))
}

// MinStep returns the MinStepKey hint of an incoming call: ok false if
// there is none, an error if it is not one integer.
func MinStep(ctx context.Context) (step int64, ok bool, err error) {
	v := metadata.ValueFromIncomingContext(ctx, MinStepKey)
	if len(v) == 0 {
		return 0, false, nil
	}
	step, err = strconv.ParseInt(v[0], 10, 64)
	if len(v) > 1 || err != nil {
		return 0, false, fmt.Errorf("%s %q: want one integer step", MinStepKey, v)
	}
	return step, true, nil
}
