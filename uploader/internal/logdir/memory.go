package logdir

import (
	"bytes"
	"context"
	"fmt"
	"io"
)

// Memory is a logdir of one run with one event file held in memory, e.g. a model
// graph turned into a graph_def event so it uploads like any logdir.
type Memory struct {
	Name string // describes the source, e.g. the model file
	Run  string
	File string
	Data []byte
}

func (m *Memory) String() string { return m.Name }

// Scan lists the one run and file.
func (m *Memory) Scan(context.Context) ([]Run, error) {
	return []Run{{Name: m.Run, Files: []File{{Name: m.File, Path: m.File, Size: int64(len(m.Data))}}}}, nil
}

// Open reads the file from offset.
func (m *Memory) Open(_ context.Context, path string, offset int64) (io.ReadCloser, error) {
	if path != m.File || offset < 0 || offset > int64(len(m.Data)) {
		return nil, fmt.Errorf("no file %q at offset %d", path, offset)
	}
	return io.NopCloser(bytes.NewReader(m.Data[offset:])), nil
}

// Stat returns the file's size.
func (m *Memory) Stat(_ context.Context, path string) (int64, error) {
	if path != m.File {
		return 0, fmt.Errorf("no file %q", path)
	}
	return int64(len(m.Data)), nil
}
