//go:build linux || darwin

package diskspace

import "syscall"

// Statfs reports the space of the file system holding dir.
func Statfs(dir string) (Usage, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return Usage{}, err
	}
	return Usage{Free: uint64(st.Bavail) * uint64(st.Bsize), Total: uint64(st.Blocks) * uint64(st.Bsize)}, nil
}
