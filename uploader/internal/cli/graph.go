package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/tbhub/tbhub/uploader/eventgen"
	"github.com/tbhub/tbhub/uploader/internal/logdir"
)

// graphSource reads a standalone GraphDef — binary (.pb) or text format (.pbtxt),
// as TensorFlow's model files come — and presents it as a logdir whose one run holds
// it as the run graph, so it is uploaded and viewed like a logdir's graph.
func graphSource(path string) (logdir.Source, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var g tbpb.GraphDef
	textFirst := strings.HasSuffix(path, ".pbtxt") || strings.HasSuffix(path, ".txt")
	parseBinary := func() error { return proto.Unmarshal(raw, &g) }
	parseText := func() error { return prototext.Unmarshal(raw, &g) }
	first, second := parseBinary, parseText
	if textFirst {
		first, second = parseText, parseBinary
	}
	if err := first(); err != nil {
		g.Reset()
		if err2 := second(); err2 != nil {
			return nil, fmt.Errorf("%s is not a GraphDef in binary or text format: %v", path, err)
		}
	}
	if len(g.GetNode()) == 0 && len(g.GetLibrary().GetFunction()) == 0 {
		return nil, fmt.Errorf("%s holds no graph nodes", path)
	}
	graph, err := proto.MarshalOptions{Deterministic: true}.Marshal(&g)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	w := eventgen.NewWriter(&buf)
	wall := float64(time.Now().UnixNano()) / 1e9
	if fi, err := os.Stat(path); err == nil {
		wall = float64(fi.ModTime().UnixNano()) / 1e9
	}
	if err := w.WriteEvent(&tbpb.Event{WallTime: wall, What: &tbpb.Event_GraphDef{GraphDef: graph}}); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	base := filepath.Base(path)
	run := strings.TrimSuffix(base, filepath.Ext(base))
	abs, _ := filepath.Abs(path)
	return &logdir.Memory{Name: "graph:" + abs, Run: run, File: base + ".tfevents", Data: buf.Bytes()}, nil
}
