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
	return oneInt(ctx, MinStepKey, "integer step")
}

// BucketsKey is ReadScalars request metadata: a decimal count B, 1 to
// MaxBuckets. The call then reads each selected series bucketed instead of
// downsampled: the window's steps (MinStepKey and MaxStepKey bound it,
// both inclusive; without them, all of the series) cut into B buckets of
// equal step width and of each bucket its first, last, lowest and highest
// point and its first NaN (store.Query.Buckets), so a chart drawn from
// them misses no spike at any zoom. With it, MinStepKey bounds the window
// instead of asking for a tail, and downsample.num_points is not read.
const BucketsKey = "tbhub-buckets"

// MaxBuckets bounds BucketsKey: a few times the pixel columns of a
// chart on a large screen.
const MaxBuckets = 4_000

// MaxStepKey is ReadScalars request metadata beside BucketsKey: a decimal
// step, the last of the window read (included).
const MaxStepKey = "tbhub-max-step"

// WithBuckets returns ctx carrying a bucketed read of n buckets over the
// steps [minStep, maxStep] (nil: unbounded on that side) to the calls
// made with it.
func WithBuckets(ctx context.Context, n int, minStep, maxStep *int64) context.Context {
	kv := []string{BucketsKey, strconv.Itoa(n)}
	if minStep != nil {
		kv = append(kv, MinStepKey, strconv.FormatInt(*minStep, 10))
	}
	if maxStep != nil {
		kv = append(kv, MaxStepKey, strconv.FormatInt(*maxStep, 10))
	}
	return metadata.AppendToOutgoingContext(ctx, kv...)
}

// Buckets returns the BucketsKey hint of an incoming call and the window
// of MinStepKey and MaxStepKey (nil where absent): ok false if there is
// no BucketsKey, an error if a value is not one integer or the count is
// not from 1 to MaxBuckets.
func Buckets(ctx context.Context) (n int, minStep, maxStep *int64, ok bool, err error) {
	b, ok, err := oneInt(ctx, BucketsKey, "bucket count")
	if err != nil || !ok {
		return 0, nil, nil, ok, err
	}
	if b < 1 || b > MaxBuckets {
		return 0, nil, nil, false, fmt.Errorf("%s %d: want 1 to %d buckets", BucketsKey, b, MaxBuckets)
	}
	for key, dst := range map[string]**int64{MinStepKey: &minStep, MaxStepKey: &maxStep} {
		step, has, err := oneInt(ctx, key, "integer step")
		if err != nil {
			return 0, nil, nil, false, err
		}
		if has {
			*dst = &step
		}
	}
	return int(b), minStep, maxStep, true, nil
}

// oneInt returns the hint key of an incoming call as an integer: ok false
// if there is none, an error (naming what it should be) if it is not one
// integer.
func oneInt(ctx context.Context, key, what string) (int64, bool, error) {
	v := metadata.ValueFromIncomingContext(ctx, key)
	if len(v) == 0 {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(v[0], 10, 64)
	if len(v) > 1 || err != nil {
		return 0, false, fmt.Errorf("%s %q: want one %s", key, v, what)
	}
	return n, true, nil
}
