package experimentid

import "testing"

func TestNewIsValid(t *testing.T) {
	for range 100 {
		if id := New(); !Valid(id) {
			t.Fatalf("New() = %q, not Valid", id)
		}
	}
}

func TestValidRefusesOtherForms(t *testing.T) {
	for _, id := range []string{"", "e1", "AAECAwQFBgcICQoLDA0ODwx", "AAECAwQFBgcICQoLDA0OD/", `AAECAwQFBgcICQoLDA0OD\`, "AAECAwQFBgcICQoLDA0OD.", "AAECAwQFBgcICQoLDA0ODx"} {
		if Valid(id) {
			t.Errorf("Valid(%q) = true", id)
		}
	}
}
