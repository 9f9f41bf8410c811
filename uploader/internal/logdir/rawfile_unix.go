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
		return &rawFile{fd: fd, off: offset, path: path}, nil
	}
}

type rawFile struct {
	fd   int
	off  int64
	eof  bool
	path string
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
	err := syscall.Close(f.fd)
	f.fd = -1
	return err
}
