package store

import (
	"errors"
	"testing"
)

func TestBlobIDsRoundTrip(t *testing.T) {
	eid := NewExperimentID()
	for _, ref := range []BlobRef{
		{Run: ".", Tag: "images/sample", Step: 0, Index: 0},
		{Run: "train/a.b", Tag: "t\x00ag ü", Step: -5, Index: 7},
		{Run: "r", Tag: "", Step: 1 << 62, Index: 1 << 40},
	} {
		gotEID, got, err := ParseBlobID(BlobID(eid, ref))
		if err != nil || gotEID != eid || got != ref {
			t.Errorf("ParseBlobID(BlobID(%+v)) = %s, %+v, %v", ref, gotEID, got, err)
		}
		seq := BlobSequenceID(eid, ref.Run, ref.Tag, ref.Step)
		gotEID, got, err = ParseBlobSequenceID(seq)
		want := ref
		want.Index = 0
		if err != nil || gotEID != eid || got != want {
			t.Errorf("ParseBlobSequenceID = %s, %+v, %v; want %+v", gotEID, got, err, want)
		}
		if ExperimentOfBlobKey(seq) != eid {
			t.Errorf("ExperimentOfBlobKey(%q) != %s", seq, eid)
		}
		// A sequence ID is not a blob ID and vice versa.
		if _, _, err := ParseBlobID(seq); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("ParseBlobID(sequence id) = %v", err)
		}
		if _, _, err := ParseBlobSequenceID(BlobID(eid, ref)); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("ParseBlobSequenceID(blob id) = %v", err)
		}
	}
	for _, bad := range []string{"", "nodot", eid + ".", eid + ".!!", "short.AAAA", eid + ".AQ"} {
		if _, _, err := ParseBlobID(bad); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("ParseBlobID(%q) = %v, want ErrInvalidArgument", bad, err)
		}
	}
}

func FuzzParseBlobID(f *testing.F) {
	f.Add(BlobID(NewExperimentID(), BlobRef{Run: "r", Tag: "t", Step: 3, Index: 1}))
	f.Fuzz(func(t *testing.T, id string) {
		eid, ref, err := ParseBlobID(id)
		if err != nil {
			return
		}
		if again := BlobID(eid, ref); again != id {
			t.Errorf("BlobID(ParseBlobID(%q)) = %q", id, again)
		}
	})
}
