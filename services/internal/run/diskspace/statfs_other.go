//go:build !(linux || darwin)

package diskspace

import "errors"

// Statfs reports the space of the file system holding dir; on this
// operating system it cannot, and the reserve is not enforced.
func Statfs(dir string) (Usage, error) {
	return Usage{}, errors.New("diskspace: free space is not known on this operating system")
}
