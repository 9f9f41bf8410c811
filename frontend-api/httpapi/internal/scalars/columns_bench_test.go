package scalars

import (
	"math"
	"syscall"
	"testing"
	"time"

	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/route"
	datapb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/data"
)

// benchColumns is a card's answer as BenchmarkUpload's card reads it
// (services/allinone/e2e, issue 21): runs series of n points, wall times 0.1 s
// apart from 1.7e9 and float32 values of a sine, as eventgen writes them.
func benchColumns(runs, n int) []columnsAnswer {
	answers := make([]columnsAnswer, runs)
	for r := range answers {
		d := &datapb.ScalarData{Step: make([]int64, n), WallTime: make([]float64, n), Value: make([]float32, n)}
		for i := range n {
			s := i * 5 / 4 // bucketed: about 4 points of every 5
			d.Step[i], d.WallTime[i], d.Value[i] = int64(s), 1.7e9+float64(s)*0.1, float32(math.Sin(float64(s)*0.01+5))
		}
		answers[r] = columnsAnswer{ScalarSeries: route.ScalarSeries{Run: "run", Tag: "metrics/tag_00", Data: d}}
	}
	return answers
}

func BenchmarkAppendScalarColumns(b *testing.B) {
	answers := benchColumns(100, 2000)
	var buf []byte
	b.ReportAllocs()
	cpu := processCPU()
	for b.Loop() {
		buf = make([]byte, 0, answerBytes(answers))
		for _, a := range answers {
			buf = appendScalarColumns(buf, a)
		}
	}
	if len(buf) > answerBytes(answers) {
		b.Errorf("answerBytes %d is below the answer's %d bytes", answerBytes(answers), len(buf))
	}
	// CPU, not wall time: on a shared machine a wall time is mostly waiting.
	b.ReportMetric(float64((processCPU()-cpu).Nanoseconds())/float64(b.N*100*2000), "cpu-ns/point")
	b.ReportMetric(float64(len(buf)), "bytes")
}

// processCPU is the CPU time this process has used (user and system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
