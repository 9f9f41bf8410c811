//go:build !(linux || darwin)

package backend

// lockDataDir does not lock on this operating system: two servers on one
// folder are not prevented here.
func lockDataDir(dir string) (unlock func() error, err error) {
	return func() error { return nil }, nil
}
