// Package logdir finds the runs and event files of a TensorBoard log directory, on
// local disk or in a GCS bucket (gs://bucket/prefix).
//
// A run is every directory under the logdir (recursively, not following symlinked
// directories) that directly holds at least one regular file whose name contains
// "tfevents"; a symlink to a regular file counts. Its name is the path relative to
// the logdir with "/" separators, "." for the logdir itself. A run's files are read
// in code-point order of their names.
package logdir

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// File is one event file of a run.
type File struct {
	Name string // base name
	Path string // what Source.Open takes
	Size int64  // size when listed, -1 if not known; files may grow
}

// Run is a directory of event files.
type Run struct {
	Name  string
	Files []File
}

// Source is a logdir that can be listed and read.
type Source interface {
	// Scan lists the runs, sorted by name, each with its files sorted by name.
	Scan(ctx context.Context) ([]Run, error)
	// Open reads a file from byte offset onwards.
	Open(ctx context.Context, path string, offset int64) (io.ReadCloser, error)
	// Stat returns a file's current size.
	Stat(ctx context.Context, path string) (int64, error)
	// String names the logdir for people.
	String() string
}

// ErrNotFound means the logdir does not exist.
var ErrNotFound = errors.New("logdir not found")

// IsEventFile says whether a base name is an event file's.
func IsEventFile(name string) bool { return strings.Contains(name, "tfevents") }

// Open returns the Source for a local path or a gs:// URL.
func Open(ctx context.Context, logdir string) (Source, error) {
	if strings.HasPrefix(logdir, "gs://") {
		return openGCS(ctx, logdir)
	}
	fi, err := os.Stat(logdir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s", ErrNotFound, logdir)
		}
		return nil, fmt.Errorf("logdir %s: %w", logdir, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("logdir %s is not a directory", logdir)
	}
	return Local(logdir), nil
}

// Local is a logdir on local disk.
type Local string

func (l Local) String() string { return string(l) }

// Scan walks the directory tree without following symlinked directories.
func (l Local) Scan(ctx context.Context) ([]Run, error) {
	root := string(l)
	byDir := map[string][]File{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root {
				return err
			}
			// An unreadable subdirectory hides only its own runs.
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if d.IsDir() || !IsEventFile(d.Name()) {
			return nil
		}
		// The size lets the uploader measure its progress and pass over a
		// file that has not grown without opening it.
		size := int64(-1) // unknown: the file went between listing and stat
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				size = fi.Size()
			}
		} else {
			fi, err := os.Stat(p) // follows a symlink to a file; broken links fail
			if err != nil || !fi.Mode().IsRegular() {
				return nil
			}
			size = fi.Size()
		}
		dir := filepath.Dir(p)
		byDir[dir] = append(byDir[dir], File{Name: d.Name(), Path: p, Size: size})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("scanning %s: %w", root, err)
	}
	runs := make([]Run, 0, len(byDir))
	for dir, files := range byDir {
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			return nil, err
		}
		runs = append(runs, Run{Name: filepath.ToSlash(rel), Files: files})
	}
	return sortRuns(runs), nil
}

// Open opens a local file at offset.
func (l Local) Open(_ context.Context, p string, offset int64) (io.ReadCloser, error) {
	return openFile(p, offset)
}

// pathError is an error about one file, worded as os's are.
type pathError struct {
	op, path string
	err      error
}

func (e *pathError) Error() string { return e.op + " " + e.path + ": " + e.err.Error() }
func (e *pathError) Unwrap() error { return e.err }

// Stat returns a local file's size.
func (l Local) Stat(_ context.Context, p string) (int64, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

func sortRuns(runs []Run) []Run {
	sort.Slice(runs, func(i, j int) bool { return runs[i].Name < runs[j].Name })
	for _, r := range runs {
		sort.Slice(r.Files, func(i, j int) bool { return r.Files[i].Name < r.Files[j].Name })
	}
	return runs
}

// runName turns a directory path relative to the logdir ("" for the root) into a run name.
func runName(rel string) string {
	rel = strings.Trim(rel, "/")
	if rel == "" {
		return "."
	}
	return path.Clean(rel)
}
