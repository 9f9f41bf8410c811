package limits

import (
	"crypto/sha256"
	"fmt"
	"net/netip"
	"testing"
	"time"
)

// One address's failed checks spend its budget; then its unknown
// credentials wait for the refill, while a credential verified before, a
// check that succeeds, another address and the process's own calls are
// not held back.
func TestBadCredentialsBudgetPerAddress(t *testing.T) {
	now := time.Unix(1e9, 0)
	b := NewBadCredentials(CredentialLimits{PerSecond: 2, Burst: 3}, func() time.Time { return now })
	a, other := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	c, wait := b.Admit(a, true, "Bearer good")
	if wait != 0 {
		t.Fatal("first check refused")
	}
	c.Valid("u1") // given back, and remembered
	for i := range 3 {
		if _, wait := b.Admit(a, true, fmt.Sprint("Bearer bad", i)); wait != 0 {
			t.Fatalf("check %d of a burst of 3 refused", i)
		}
	}
	if _, wait := b.Admit(a, true, "Bearer bad3"); wait != 500*time.Millisecond {
		t.Errorf("spent budget: wait %v, want 500ms (2/s)", wait)
	}
	if _, wait := b.Admit(a, true, "Bearer good"); wait != 0 {
		t.Error("a credential verified before was refused")
	}
	b.known.put(a, sha256.Sum256([]byte("Bearer revoked")), "u2", now) // verified once, then revoked:
	c, wait = b.Admit(a, true, "Bearer revoked")
	if wait != 0 {
		t.Fatal("a known credential was refused")
	}
	c.Invalid() // refused once, it is known no more
	if _, wait := b.Admit(a, true, "Bearer revoked"); wait == 0 {
		t.Error("a known credential refused since passed a spent budget")
	}
	if _, wait := b.Admit(other, true, "Bearer bad"); wait != 0 {
		t.Error("another address was refused")
	}
	if _, wait := b.Admit(netip.Addr{}, false, "Bearer bad"); wait != 0 {
		t.Error("a call without a client address was refused")
	}
	now = now.Add(500 * time.Millisecond)
	c, wait = b.Admit(a, true, "Bearer new")
	if wait != 0 {
		t.Fatal("refilled budget refused")
	}
	c.Undecided() // neither valid nor invalid: given back
	if _, wait := b.Admit(a, true, "Bearer bad4"); wait != 0 {
		t.Error("an undecided check kept its budget")
	}
	// Known credentials are forgotten after KnownCredentialTTL.
	now = now.Add(KnownCredentialTTL)
	for i := range 3 {
		b.Admit(a, true, fmt.Sprint("Bearer later", i))
	}
	if _, wait := b.Admit(a, true, "Bearer good"); wait == 0 {
		t.Error("a credential verified longer ago than KnownCredentialTTL passed a spent budget")
	}
}

// Addresses in one IPv6 /64 share a budget; the budgets kept are bounded.
func TestBadCredentialsStateIsBounded(t *testing.T) {
	now := time.Unix(1e9, 0)
	b := NewBadCredentials(CredentialLimits{PerSecond: 1, Burst: 1}, func() time.Time { return now })
	b.Admit(netip.MustParseAddr("2001:db8::1"), true, "Bearer x")
	if _, wait := b.Admit(netip.MustParseAddr("2001:db8::2"), true, "Bearer y"); wait == 0 {
		t.Error("a second address of the same /64 got a budget of its own")
	}
	for i := range MaxThrottledAddresses + 100 {
		b.Admit(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), true, "Bearer z")
	}
	if n := b.Addresses(); n != MaxThrottledAddresses {
		t.Errorf("%d budgets kept after %d addresses, want %d", n, MaxThrottledAddresses+101, MaxThrottledAddresses)
	}
}

// A credential verified from an address stays known there whatever other
// credentials are verified, from that address or any other: an attacker
// behind the victim's address (a NAT, a proxy the server cannot see past)
// who verifies many tokens of their own, then spends the address's budget
// with bad ones, must not get the victim refused. The remembered
// credentials stay bounded per address and in total.
func TestKnownCredentialsCannotBeFlushed(t *testing.T) {
	now := time.Unix(1e9, 0)
	b := NewBadCredentials(CredentialLimits{PerSecond: 1, Burst: 1}, func() time.Time { return now })
	shared := netip.MustParseAddr("198.51.100.7")
	verify := func(a netip.Addr, cred, user string) {
		t.Helper()
		c, wait := b.Admit(a, true, cred)
		if wait != 0 {
			t.Fatalf("verifying %q from %v: refused", cred, a)
		}
		c.Valid(user)
	}
	verify(shared, "Bearer victim", "victim")
	// The attacker verifies more tokens of their account than the whole
	// list once held, from the victim's address and from many others.
	for i := range 10_001 {
		verify(shared, fmt.Sprint("Bearer attacker", i), "attacker")
	}
	if n := b.knownAt(shared); n > 1+MaxKnownCredentialsPerUser {
		t.Errorf("one user's tokens took %d places at an address, want at most %d", n-1, MaxKnownCredentialsPerUser)
	}
	// Another user signing in behind the same address later is still
	// remembered.
	verify(shared, "Bearer colleague", "colleague")
	for i := range MaxKnownCredentials + 100 {
		verify(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), fmt.Sprint("Bearer elsewhere", i), fmt.Sprint("user", i))
	}
	if n := b.KnownCredentials(); n > MaxKnownCredentials {
		t.Errorf("%d credentials remembered, want at most %d", n, MaxKnownCredentials)
	}
	if n := b.knownAt(shared); n > MaxKnownCredentialsPerAddress {
		t.Errorf("%d credentials remembered for one address, want at most %d", n, MaxKnownCredentialsPerAddress)
	}
	// Then spends the address's budget with bad tokens.
	for i := range 5 {
		b.Admit(shared, true, fmt.Sprint("Bearer bad", i))
	}
	if _, wait := b.Admit(shared, true, "Bearer bad-more"); wait == 0 {
		t.Fatal("the address's budget is not spent; the test proves nothing")
	}
	if _, wait := b.Admit(shared, true, "Bearer victim"); wait != 0 {
		t.Error("the victim's verified credential was flushed out by the attacker's: refused on a spent budget")
	}
	if _, wait := b.Admit(shared, true, "Bearer colleague"); wait != 0 {
		t.Error("a user verified behind the address after the attacker's tokens was not remembered: refused on a spent budget")
	}
	// Entries expire; their room is given to new credentials.
	now = now.Add(KnownCredentialTTL)
	verify(netip.MustParseAddr("203.0.113.9"), "Bearer later", "later")
	if n := b.KnownCredentials(); n != 1 {
		t.Errorf("%d credentials remembered after every other expired, want 1", n)
	}
}

// knownAt is how many credentials are remembered for one address.
func (b *BadCredentials) knownAt(a netip.Addr) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.known.perAddress[addressKey(a)]
}
