// Command tbgen writes a synthetic TensorBoard logdir for benchmarks and tests.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/tbhub/tbhub/uploader/eventgen"
)

func main() {
	var spec eventgen.Spec
	out := flag.String("out", "", "directory to write the logdir into (required)")
	flag.IntVar(&spec.Runs, "runs", 10, "runs")
	flag.IntVar(&spec.Tags, "tags", 10, "scalar tags per run")
	flag.IntVar(&spec.Steps, "steps", 1000, "steps per scalar tag")
	flag.IntVar(&spec.Images, "images", 0, "image points in total")
	flag.IntVar(&spec.ImageBytes, "image-bytes", 100_000, "bytes per image")
	flag.BoolVar(&spec.Legacy, "legacy", false, "write legacy simple_value scalars")
	flag.Int64Var(&spec.Seed, "seed", 1, "varies the values")
	flag.IntVar(&spec.FirstStep, "first-step", 0, "step of the first point; above 0, runs' event files that exist are appended to (a job still training)")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "tbgen: --out is required")
		flag.Usage()
		os.Exit(2)
	}
	n, err := eventgen.WriteLogdir(*out, spec)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tbgen:", err)
		os.Exit(1)
	}
	fmt.Printf("wrote %d bytes (%d scalar points, %d images) to %s\n", n, spec.Runs*spec.Tags*spec.Steps, spec.Images, *out)
}
