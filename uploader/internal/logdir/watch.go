package logdir

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/fsnotify/fsnotify"
)

// Watcher is a Source that can tell when it may have changed, so that a
// continuous upload reads new data at once instead of at its next poll.
// A local logdir is one (file-system notifications); a gs:// logdir is not
// and is polled.
type Watcher interface {
	// Watch starts watching. The channel receives a value (coalesced:
	// several changes may give one) after anything under the logdir was
	// created, written or renamed, and is closed when ctx ends or the watch
	// fails later (the caller then relies on polling). The error says why
	// it could not start, e.g. the system's limit on watches was reached.
	Watch(ctx context.Context) (<-chan struct{}, error)
}

// Watch watches every directory under the logdir (not following symlinked
// directories, as Scan), adding the ones created later. It costs one
// inotify watch per directory on Linux.
func (l Local) Watch(ctx context.Context) (<-chan struct{}, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watching %s: %w", l, err)
	}
	if err := addTree(w, string(l)); err != nil {
		w.Close()
		return nil, fmt.Errorf("watching %s: %w", l, err)
	}
	changes := make(chan struct{}, 1)
	notify := func() {
		select {
		case changes <- struct{}{}:
		default: // one already waiting says the same
		}
	}
	go func() {
		defer close(changes)
		defer w.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if ev.Has(fsnotify.Create) {
					// A new run's directory: watch it, and what it may already hold.
					if err := addTree(w, ev.Name); err != nil && !errors.Is(err, fs.ErrNotExist) {
						return // the limit was reached: polling takes over
					}
				}
				if ev.Op&(fsnotify.Create|fsnotify.Write|fsnotify.Rename) != 0 {
					notify()
				}
			case _, ok := <-w.Errors:
				// An overflowed queue lost events: rescan now; a closed one ends the watch.
				if !ok {
					return
				}
				notify()
			}
		}
	}()
	return changes, nil
}

// addTree watches root and every directory under it; root may be a file
// (then nothing is added).
func addTree(w *fsnotify.Watcher, root string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root {
				return err
			}
			return nil // an unreadable subdirectory is not watched, as Scan skips it
		}
		if !d.IsDir() {
			return nil
		}
		return w.Add(p)
	})
}
