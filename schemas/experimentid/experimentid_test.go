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
	for _, id := range []string{"", "e1", "AAECAwQFBgcICQoLDA0ODwx", "AAECAwQFBgcICQoLDA0OD/", `AAECAwQFBgcICQoLDA0OD\`, "AAECAwQFBgcICQoLDA0OD.", "AAECAwQFBgcICQoLDA0ODx",
		// Go's base64 decoding skips CR and LF, even strict: 20 characters
		// and line breaks are not an ID.
		"AAECAwQFBgcICQoLDA0O\r\n", "AAECAwQFBgcICQoLDA\n0O\n"} {
		if Valid(id) {
			t.Errorf("Valid(%q) = true", id)
		}
	}
}
