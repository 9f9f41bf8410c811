package scalarchunk

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// benchSteps is the length of a generated series: the issue's
// 100 runs × 2 tags × 2,500 steps.
const benchSteps = 2500

// wallClock returns n wall times as Python's time.time() gives them (whole
// nanoseconds divided by 1e9, as a float64), from 1.7e9 s, one step each
// interval seconds (0.05 to 2) with ±20% jitter. A negative interval
// makes TensorFlow's C++ writer's times instead: whole microseconds
// divided by 1e6.
func wallClock(r *rand.Rand, n int, interval float64) []float64 {
	unit := 1e9
	if interval < 0 {
		unit, interval = 1e6, -interval
	}
	ticks := int64(1.7e9 * unit)
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(ticks) / unit
		ticks += int64(interval * (0.8 + 0.4*r.Float64()) * unit)
	}
	return out
}

// shape makes a generated series: steps from stepOf, wall times from
// wallClock, values from valueOf.
func shape(seed uint64, interval float64, stepOf func(r *rand.Rand, i int, prev int64) int64, valueOf func(r *rand.Rand, i int) float64) []store.ScalarPoint {
	r := rand.New(rand.NewPCG(seed, 1))
	walls := wallClock(r, benchSteps, interval)
	ps := make([]store.ScalarPoint, benchSteps)
	prev := int64(-1)
	for i := range ps {
		prev = stepOf(r, i, prev)
		ps[i] = store.ScalarPoint{Step: prev, WallTime: walls[i], Value: valueOf(r, i)}
	}
	return ps
}

func everyStep(_ *rand.Rand, _ int, prev int64) int64 { return prev + 1 }

// smoothLoss decays from 2.3 toward 0.1 with 1% noise, like a training
// loss averaged over a logging interval.
func smoothLoss(r *rand.Rand, i int) float64 {
	return 0.1 + 2.2*math.Exp(-float64(i)/600)*(1+0.01*r.NormFloat64())
}

// generatedShapes are the series shapes the encoding is measured on.
func generatedShapes() []corpusSeries {
	f32 := func(f func(*rand.Rand, int) float64) func(*rand.Rand, int) float64 {
		return func(r *rand.Rand, i int) float64 { return float64(float32(f(r, i))) }
	}
	return []corpusSeries{
		{"smooth float32 loss", shape(1, 0.5, everyStep, f32(smoothLoss))},
		{"smooth float32 loss, µs clock", shape(7, -0.5, everyStep, f32(smoothLoss))},
		{"noisy float32 metric", shape(2, 0.2, everyStep, f32(func(r *rand.Rand, i int) float64 {
			return 0.9 - 0.4*math.Exp(-float64(i)/500) + 0.05*r.NormFloat64()
		}))},
		{"constant", shape(3, 0.05, everyStep, func(*rand.Rand, int) float64 { return float64(float32(1e-3)) })},
		{"steps 0, 100, 200…", shape(4, 2, func(_ *rand.Rand, i int, _ int64) int64 { return 100 * int64(i) }, f32(smoothLoss))},
		{"irregular steps", shape(5, 1, func(r *rand.Rand, _ int, prev int64) int64 { return prev + 1 + r.Int64N(1000) }, f32(smoothLoss))},
		{"float64 loss", shape(6, 0.5, everyStep, smoothLoss)},
	}
}

// chunkSizes are the chunk lengths measured: about Prometheus's 120, and a
// larger one for stores that pay per row.
var chunkSizes = []int{128, 1024}

// encodeInChunks returns the chunks of points, n points each.
func encodeInChunks(tb testing.TB, points []store.ScalarPoint, n int) [][]byte {
	var chunks [][]byte
	for start := 0; start < len(points); start += n {
		c, err := Encode(points[start:min(start+n, len(points))])
		if err != nil {
			tb.Fatal(err)
		}
		chunks = append(chunks, c)
	}
	return chunks
}

func chunkBytes(chunks [][]byte) int {
	n := 0
	for _, c := range chunks {
		n += len(c)
	}
	return n
}

// benchSet is series measured together: one generated shape, or all the
// corpus's series.
type benchSet struct {
	name   string
	series [][]store.ScalarPoint
}

// benchSets are the generated shapes, then the corpus: the files of real
// tools, and those TensorBoard's writer generated (mostly one smooth
// 20,000-step series).
func benchSets(b *testing.B) []benchSet {
	var sets []benchSet
	for _, s := range generatedShapes() {
		sets = append(sets, benchSet{s.name, [][]store.ScalarPoint{s.points}})
	}
	real, generated := benchSet{name: "corpus real"}, benchSet{name: "corpus generated"}
	for _, s := range corpusScalars(b) {
		if strings.HasPrefix(s.name, "real/") {
			real.series = append(real.series, s.points)
		} else {
			generated.series = append(generated.series, s.points)
		}
	}
	return append(sets, real, generated)
}

// BenchmarkEncode measures encoding per point and reports the bytes per
// point of the result, headers included.
func BenchmarkEncode(b *testing.B) {
	for _, s := range benchSets(b) {
		for _, size := range chunkSizes {
			b.Run(fmt.Sprintf("%s/chunk=%d", s.name, size), func(b *testing.B) {
				parts := s.series
				points, bytes := 0, 0
				for _, p := range parts {
					points += len(p)
					bytes += chunkBytes(encodeInChunks(b, p, size))
				}
				b.ResetTimer()
				cpu := cpuTime()
				for b.Loop() {
					for _, p := range parts {
						encodeInChunks(b, p, size)
					}
				}
				b.ReportMetric(float64(bytes)/float64(points), "B/point")
				reportPerPoint(b, points, cpu)
			})
		}
	}
}

// BenchmarkDecode measures decoding per point with Decode.
func BenchmarkDecode(b *testing.B) {
	for _, s := range benchSets(b) {
		for _, size := range chunkSizes {
			b.Run(fmt.Sprintf("%s/chunk=%d", s.name, size), func(b *testing.B) {
				var chunks [][]byte
				points := 0
				for _, p := range s.series {
					points += len(p)
					chunks = append(chunks, encodeInChunks(b, p, size)...)
				}
				buf := make([]store.ScalarPoint, 0, size)
				b.ResetTimer()
				cpu := cpuTime()
				for b.Loop() {
					for _, c := range chunks {
						var err error
						if buf, err = Decode(c, buf[:0]); err != nil {
							b.Fatal(err)
						}
					}
				}
				reportPerPoint(b, points, cpu)
			})
		}
	}
}

// cpuTime is the process's CPU time, user and system: on a shared machine
// a truer cost than the time elapsed.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportPerPoint reports the elapsed and CPU time (since cpuStart) per
// point of a benchmark whose every iteration handled points points.
func reportPerPoint(b *testing.B, points int, cpuStart time.Duration) {
	n := float64(b.N * points)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/point")
	b.ReportMetric(float64((cpuTime()-cpuStart).Nanoseconds())/n, "cpu-ns/point")
}

// BenchmarkColumnCost splits each generated shape's bytes per point
// between its columns: it encodes the shape with every wall time replaced
// by the first (what steps and values cost) and with every value replaced
// by the first (what steps and wall times cost).
func BenchmarkColumnCost(b *testing.B) {
	for _, s := range generatedShapes() {
		b.Run(s.name, func(b *testing.B) {
			sameWall, sameValue := slices.Clone(s.points), slices.Clone(s.points)
			for i := range s.points {
				sameWall[i].WallTime, sameValue[i].Value = s.points[0].WallTime, s.points[0].Value
			}
			var all, values, walls int
			for b.Loop() {
				all = chunkBytes(encodeInChunks(b, s.points, chunkSizes[1]))
				values = chunkBytes(encodeInChunks(b, sameWall, chunkSizes[1]))
				walls = chunkBytes(encodeInChunks(b, sameValue, chunkSizes[1]))
			}
			n := float64(len(s.points))
			b.ReportMetric(float64(all)/n, "B/point")
			b.ReportMetric(float64(values)/n, "B/point-steps+values")
			b.ReportMetric(float64(walls)/n, "B/point-steps+walls")
		})
	}
}
