package diskspace

import (
	"errors"
	"testing"
	"time"

	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// The reserve is the larger of its two bounds; the file system is asked
// once per MaxAge, not once per write; a file system that cannot be asked
// does not stop writes.
func TestMonitor(t *testing.T) {
	for _, tc := range []struct {
		name    string
		reserve Reserve
		usage   Usage
		statErr error
		full    bool
	}{
		{"room", DefaultReserve(), Usage{Free: 2 << 30, Total: 100 << 30}, nil, false},
		{"under the percentage", DefaultReserve(), Usage{Free: 512 << 20, Total: 100 << 30}, nil, true},
		{"under the bytes", DefaultReserve(), Usage{Free: 100 << 20, Total: 1 << 30}, nil, true},
		{"bytes only", Reserve{MinFreeBytes: 256 << 20}, Usage{Free: 512 << 20, Total: 100 << 30}, nil, false},
		{"off", Reserve{}, Usage{Free: 0, Total: 100 << 30}, nil, false},
		{"unknown", DefaultReserve(), Usage{}, errors.New("statfs: not supported"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			now := time.Unix(0, 0)
			m, err := NewMonitor("/data", tc.reserve, Options{
				Statfs: func(string) (Usage, error) { calls++; return tc.usage, tc.statErr },
				Now:    func() time.Time { return now },
			})
			if err != nil {
				t.Fatal(err)
			}
			for range 3 {
				if err := m.Check(); errors.Is(err, store.ErrDiskFull) != tc.full {
					t.Errorf("Check() = %v, want full %v", err, tc.full)
				}
			}
			if calls != 1 {
				t.Errorf("statfs called %d times within MaxAge, want 1", calls)
			}
			now = now.Add(DefaultMaxAge)
			m.Check()
			if calls != 2 {
				t.Errorf("statfs called %d times after MaxAge, want 2", calls)
			}
		})
	}
}

func TestReserveValidate(t *testing.T) {
	for _, r := range []Reserve{{MinFreeBytes: -1}, {MinFreePercent: -1}, {MinFreePercent: 100}} {
		if r.Validate() == nil {
			t.Errorf("%+v is valid", r)
		}
	}
	if err := DefaultReserve().Validate(); err != nil {
		t.Errorf("the default reserve: %v", err)
	}
}

// The operating system's answer for a real folder is some space.
func TestStatfs(t *testing.T) {
	u, err := Statfs(t.TempDir())
	if err != nil {
		t.Skipf("no statfs here: %v", err)
	}
	if u.Total == 0 || u.Free > u.Total {
		t.Errorf("Statfs = %+v", u)
	}
}
