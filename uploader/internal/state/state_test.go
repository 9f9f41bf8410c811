package state

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestSaveLoadRoundTripAndAtomicity(t *testing.T) {
	dir := t.TempDir()
	p := Path(dir, "http://localhost:6006", "/logs")
	if p == Path(dir, "http://localhost:6006", "/other") || p == Path(dir, "http://other", "/logs") {
		t.Fatal("state paths collide across servers or logdirs")
	}
	if s, err := Load(p); s != nil || err != nil {
		t.Fatalf("missing state: %v, %v", s, err)
	}
	s := New("http://localhost:6006", "/logs")
	s.Reset("EID")
	s.Run("train").Files["events.out.tfevents.1"] = &File{Offset: 1234}
	s.Run("train").Series["loss"] = &Series{Plugin: "scalars", Class: 1, Metadata: []byte{1, 2}}
	if err := Save(p, s); err != nil {
		t.Fatal(err)
	}
	got, err := Load(p)
	if err != nil || !reflect.DeepEqual(got, s) {
		t.Fatalf("loaded %+v, %v", got, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
	if err := os.WriteFile(p, []byte(`{"version": 99}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), "format 99") {
		t.Errorf("unknown version: %v", err)
	}
	if err := os.WriteFile(p, []byte(`{"vers`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("damaged file: %v", err)
	}
	if filepath.Dir(p) != dir {
		t.Errorf("path %s not under %s", p, dir)
	}
}
