//go:build unix

package logdir

import (
	"io"
	"syscall"
)

// openFile opens a local event file for reading from offset with plain pread(2)
// calls. Event files are many and small; os.Open costs an extra fstat per file and
// reading to io.EOF an extra read, which on real logdirs is a visible share of the
// time. A short read from a regular file means its end (for now: a growing file is
// opened again on the next pass).
func openFile(path string, offset int64) (io.ReadCloser, error) {
	for {
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &pathError{op: "open", path: path, err: err}
		}
		return &rawFile{fd: fd, off: offset, path: path, size: -1}, nil
	}
}

type rawFile struct {
	fd     int
	off    int64
	eof    bool
	path   string
	size   int64  // from fstat at the first View; -1 before
	mapped []byte // the current view's mapping
	views  int
}

// View maps [off, off+n) of the file, cut at the size the file had at the first
// View, in place of copying it (eventfile.Viewer). The previous view is unmapped.
// A file that cannot be mapped is declined at the first View and read by copying.
func (f *rawFile) View(off int64, n int) ([]byte, bool, error) {
	if f.size < 0 {
		var st syscall.Stat_t
		if err := syscall.Fstat(f.fd, &st); err != nil {
			return nil, false, &pathError{op: "stat", path: f.path, err: err}
		}
		f.size = st.Size
	}
	if err := f.unmap(); err != nil {
		return nil, false, err
	}
	if off >= f.size || n <= 0 {
		return nil, true, nil
	}
	start := off &^ int64(syscall.Getpagesize()-1)
	end := min(f.size, off+int64(n))
	m, err := syscall.Mmap(f.fd, start, int(end-start), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		if f.views == 0 {
			return nil, false, nil
		}
		return nil, false, &pathError{op: "mmap", path: f.path, err: err}
	}
	f.mapped = m
	f.views++
	return m[off-start:], true, nil
}

func (f *rawFile) unmap() error {
	if f.mapped == nil {
		return nil
	}
	err := syscall.Munmap(f.mapped)
	f.mapped = nil
	if err != nil {
		return &pathError{op: "munmap", path: f.path, err: err}
	}
	return nil
}

func (f *rawFile) Read(p []byte) (int, error) {
	if f.eof || len(p) == 0 {
		if f.eof {
			return 0, io.EOF
		}
		return 0, nil
	}
	for {
		n, err := syscall.Pread(f.fd, p, f.off)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 0, &pathError{op: "read", path: f.path, err: err}
		}
		f.off += int64(n)
		if n == 0 {
			f.eof = true
			return 0, io.EOF
		}
		if n < len(p) {
			f.eof = true
		}
		return n, nil
	}
}

func (f *rawFile) Close() error {
	if f.fd < 0 {
		return nil
	}
	uerr := f.unmap()
	err := syscall.Close(f.fd)
	if err == nil {
		err = uerr
	}
	f.fd = -1
	return err
}
