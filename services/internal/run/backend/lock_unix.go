//go:build linux || darwin

package backend

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockDataDir takes an exclusive lock (flock) on dir's lock file, held
// until the returned function releases it or the process ends. It fails
// at once, naming dir, when another process holds it.
func lockDataDir(dir string) (unlock func() error, err error) {
	name := filepath.Join(dir, lockFile)
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("backend: lock the data folder: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("the data folder %s is in use by another tbhub server (it holds %s); stop that server first, or give this one another --data", dir, name)
		}
		return nil, fmt.Errorf("backend: lock the data folder %s: %w", dir, err)
	}
	// Closing the file releases the lock.
	return f.Close, nil
}
