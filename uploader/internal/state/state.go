// Package state keeps an upload's progress on disk so that tbup can stop at any
// moment (Ctrl-C, kill -9, a crash) and continue without losing or duplicating data.
//
// There is one state file per (server, logdir). It records the experiment and, for
// every event file, the byte offset up to which every record has been acknowledged by
// the server, plus each series' first-value metadata (which later files depend on).
// It is only ever replaced whole: written to a temporary file, synced, and renamed
// over the old one, so a reader sees either the old or the new state.
package state

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Version is the state file format.
const Version = 1

// Series is what is remembered of a series across runs of tbup.
type Series struct {
	Plugin   string `json:"plugin"`
	Class    uint8  `json:"class"`
	Metadata []byte `json:"metadata"` // serialized SummaryMetadata after migration
}

// File is one event file's progress.
type File struct {
	Offset int64 `json:"offset"` // every record before this offset is on the server
	// Stopped records why reading stopped for good (a corrupt length), so the
	// problem is reported once, not on every poll.
	Stopped string `json:"stopped,omitempty"`
	// Skipped counts the damaged records passed over before Offset (a bad
	// data CRC, too large), which the server is told of with the run
	// (upload's damage): a resumed upload does not read them again.
	Skipped int64 `json:"skipped,omitempty"`
}

// Run is one run's progress.
type Run struct {
	Files  map[string]*File   `json:"files"`
	Series map[string]*Series `json:"series"`
}

// State is an upload's progress.
type State struct {
	Version      int             `json:"version"`
	Server       string          `json:"server"`
	Logdir       string          `json:"logdir"`
	ExperimentID string          `json:"experiment_id"`
	Runs         map[string]*Run `json:"runs"`
	// CreateRequestID is the request ID of a CreateExperiment the server
	// has not acknowledged yet: kept (and saved) from before the first
	// attempt until the answer, so every retry, by this run of tbup or a
	// later one, asks for the same experiment (package
	// schemas/writehint). Empty when no create is pending.
	CreateRequestID string `json:"create_request_id,omitempty"`
}

// New returns an empty state for an upload.
func New(server, logdir string) *State {
	return &State{Version: Version, Server: server, Logdir: logdir, Runs: map[string]*Run{}}
}

// Run returns (creating) a run's progress.
func (s *State) Run(name string) *Run {
	r := s.Runs[name]
	if r == nil {
		r = &Run{Files: map[string]*File{}, Series: map[string]*Series{}}
		s.Runs[name] = r
	}
	return r
}

// Reset forgets all progress and any pending create, keeping server and
// logdir.
func (s *State) Reset(experimentID string) {
	s.ExperimentID = experimentID
	s.CreateRequestID = ""
	s.Runs = map[string]*Run{}
}

// Path is where the state of (server, logdir) lives under dir.
func Path(dir, server, logdir string) string {
	h := sha256.Sum256([]byte(server + "\x00" + logdir))
	return filepath.Join(dir, hex.EncodeToString(h[:12])+".json")
}

// DefaultDir is the per-user directory for state files.
func DefaultDir() (string, error) {
	if d := os.Getenv("TBUP_STATE_DIR"); d != "" {
		return d, nil
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "tbup"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".local", "state", "tbup"), nil
}

// Load reads the state at path; a missing file gives (nil, nil).
func Load(path string) (*State, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("state file %s is damaged (%v); remove it to start over", path, err)
	}
	if s.Version != Version {
		return nil, fmt.Errorf("state file %s has format %d, this tbup understands %d", path, s.Version, Version)
	}
	if s.Runs == nil {
		s.Runs = map[string]*Run{}
	}
	return &s, nil
}

// Save writes the state atomically: temp file, fsync, rename, fsync of the directory.
func Save(path string, s *State) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".state-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("saving upload state: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync() // make the rename itself durable; best effort where unsupported
		d.Close()
	}
	return nil
}
