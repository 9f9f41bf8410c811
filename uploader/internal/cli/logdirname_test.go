package cli

import (
	"os"
	"path/filepath"
	"testing"
)

// An experiment uploaded without --name is named after its logdir's
// folder: the last element of the path as given, made absolute first so
// that "." and ".." name the folder they stand for.
func TestLogdirName(t *testing.T) {
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ dir, want string }{
		{"/home/ada/runs/ppo_sweep", "ppo_sweep"},
		{"/home/ada/runs/ppo_sweep/", "ppo_sweep"},
		{"runs/ppo_sweep", "ppo_sweep"},
		{".", filepath.Base(cwd)},
		{"..", filepath.Base(filepath.Dir(cwd))},
		{"./", filepath.Base(cwd)},
		{"gs://bucket/sweeps/ppo_sweep/", "ppo_sweep"},
		{"gs://bucket/sweeps/ppo_sweep", "ppo_sweep"},
		{"gs://bucket", "bucket"},
		{"gs://bucket/", "bucket"},
		{"/", ""},
	} {
		if got := logdirName(tc.dir); got != tc.want {
			t.Errorf("logdirName(%q) = %q, want %q", tc.dir, got, tc.want)
		}
	}
	// A folder name longer than an experiment name may be is cut to 100
	// characters (runes), not refused.
	long := string(make([]rune, 0)) + "é"
	for len([]rune(long)) < 150 {
		long += "é"
	}
	if got := logdirName("/x/" + long); len([]rune(got)) != 100 {
		t.Errorf("logdirName of a 150-character folder: %d characters, want 100", len([]rune(got)))
	}
}
