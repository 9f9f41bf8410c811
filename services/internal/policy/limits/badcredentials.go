package limits

import (
	"container/list"
	"crypto/sha256"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/tbhub/tbhub/services/serverkit/config"
)

// Invalid credentials (a token guessed, a revoked token retried in a
// loop) were each logged and each looked up in the store: 3,000 bad
// tokens in 0.6 s wrote 3,000 lines and made 3,000 lookups.
// BadCredentials samples the log: at most BadCredentialLogsPerSecond lines
// a second (a burst of BadCredentialLogBurst), each saying how many
// rejections it stands for. And it throttles the checks of credentials
// per client address (package clientaddr says which address a call comes
// from): each address has a budget of BadCredentialsPerSecond checks of
// credentials not known to be valid (a burst of BadCredentialBurst); a
// check that succeeds is given back, so only failed ones spend it. Once it
// is spent, further unknown credentials from that address are refused
// without a lookup until it refills. Credentials this process verified in
// the last KnownCredentialTTL are checked whatever the budget, so a
// signed-in user behind the same address (a NAT, a proxy the server cannot
// see past) keeps working during an attack.
//
// A known credential is remembered for the address it was verified from
// (its budget's key): at most MaxKnownCredentialsPerUser of one user's
// per address, MaxKnownCredentialsPerAddress per address and
// MaxKnownCredentials in all. A full list makes room only by forgetting
// expired entries, never live ones: when it was one list that forgot its
// oldest entry, an attacker behind the victim's address who verified
// 10,001 tokens of their own in 24 s flushed the victim's out, then spent
// the address's budget with bad tokens and had the victim refused. Now a
// credential verified while its user's share, its address's share or the
// whole list is full of live entries is not remembered; it is checked
// against the budget like an unknown one, and a valid check gives back
// what it took. One account's tokens take at most
// MaxKnownCredentialsPerUser places at an address, so other users behind
// it are still remembered.
const (
	BadCredentialLogsPerSecond = 1
	BadCredentialLogBurst      = 10

	BadCredentialsPerSecond = 10
	BadCredentialBurst      = 100
	// MaxThrottledAddresses bounds the addresses whose budgets are kept
	// (least recently used first out); a budget forgotten is a full one.
	MaxThrottledAddresses = 10_000
	// MaxKnownCredentials bounds the valid credentials remembered, each
	// for KnownCredentialTTL after it was last verified;
	// MaxKnownCredentialsPerAddress those of one address (a company's NAT
	// may hide a few hundred users); MaxKnownCredentialsPerUser those of
	// one user at one address (a web session, a few API tokens).
	MaxKnownCredentials           = 50_000
	MaxKnownCredentialsPerAddress = 256
	MaxKnownCredentialsPerUser    = 8
	KnownCredentialTTL            = 10 * time.Minute
)

// CredentialLimits are the per-address budget of failed credential
// checks; PerSecond 0 turns the throttle off (the log is still sampled).
type CredentialLimits struct {
	PerSecond float64
	Burst     int
	// Instances is how many processes of the service may run at once
	// (Limits.Instances): each throttles an address at its share of
	// PerSecond and Burst.
	Instances int
}

// PerInstance returns l cut to one process's share of Instances.
func (l CredentialLimits) PerInstance() CredentialLimits {
	l.PerSecond = shareRate(l.PerSecond, l.Instances)
	l.Burst = share(l.Burst, l.Instances)
	return l
}

// DefaultCredentialLimits are BadCredentialsPerSecond and
// BadCredentialBurst.
func DefaultCredentialLimits() CredentialLimits {
	return CredentialLimits{PerSecond: BadCredentialsPerSecond, Burst: BadCredentialBurst}
}

// Settings describes --bad-credentials-per-second and
// --bad-credentials-burst for an assembly's flag set, defaulting to l's values.
func (l *CredentialLimits) Settings() []config.Setting {
	return []config.Setting{
		{Name: "bad-credentials-per-second", Usage: "failed credential checks allowed per client address and second; beyond them unknown credentials get RESOURCE_EXHAUSTED without a lookup (0: no throttle)", Value: &l.PerSecond},
		{Name: "bad-credentials-burst", Usage: "failed credential checks one client address may make at once", Value: &l.Burst},
	}
}

// Validate reports a budget that cannot work.
func (l CredentialLimits) Validate() error {
	if l.PerSecond < 0 || (l.PerSecond > 0 && l.Burst < 1) {
		return fmt.Errorf("limits: the invalid-credentials budget needs a non-negative rate and, if on, a burst of at least 1")
	}
	if l.Instances < 0 {
		return fmt.Errorf("limits: instances must not be negative")
	}
	return nil
}

// BadCredentials samples the log of invalid credentials and throttles
// their checks per client address. It is safe for concurrent use.
type BadCredentials struct {
	now        func() time.Time
	lim        CredentialLimits
	mu         sync.Mutex
	log        *rate.Limiter
	suppressed int64
	budgets    lru[netip.Addr, *bucket]
	known      knownCredentials
}

// NewBadCredentials returns the sampler and throttle of l (this process's
// share of it, l.PerInstance); now is the clock (time.Now if nil).
func NewBadCredentials(l CredentialLimits, now func() time.Time) *BadCredentials {
	if now == nil {
		now = time.Now
	}
	return &BadCredentials{now: now, lim: l.PerInstance(), log: rate.NewLimiter(BadCredentialLogsPerSecond, BadCredentialLogBurst),
		budgets: newLRU[netip.Addr, *bucket](MaxThrottledAddresses), known: newKnownCredentials()}
}

// Limits returns the budget it enforces (this process's share).
func (b *BadCredentials) Limits() CredentialLimits { return b.lim }

// Check is one credential check admitted by Admit (its methods do
// nothing on the zero Check of a refused one, or of any with the throttle
// off).
type Check struct {
	b       *BadCredentials
	addr    netip.Addr
	key     [sha256.Size]byte
	charged bool
}

// Admit says whether credential (the authorization value) of a call from
// addr may be checked; ok false means no address (a call the process makes
// to itself), which is never throttled. If the address's budget is spent
// and the credential is not known valid, it returns a zero Check and how
// long until the budget has room again.
func (b *BadCredentials) Admit(addr netip.Addr, ok bool, credential string) (Check, time.Duration) {
	if b.lim.PerSecond <= 0 {
		// No throttle, so nothing to remember: only it reads the known
		// credentials. The zero Check spares every call a hash and two
		// turns of the lock.
		return Check{}, 0
	}
	c := Check{b: b, addr: addr, key: sha256.Sum256([]byte(credential))}
	if !ok {
		return c, 0
	}
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	key := addressKey(addr)
	if b.known.has(key, c.key, now) {
		return c, 0
	}
	bk, found := b.budgets.get(key)
	if !found {
		bk = &bucket{tokens: float64(b.lim.Burst), last: now}
		b.budgets.put(key, bk)
	}
	if wait := bk.take(now, b.lim); wait > 0 {
		return Check{}, wait
	}
	c.charged = true
	return c, 0
}

// Valid records that the credential was valid, and whose (the user ID):
// it is remembered, and its check gives back what it took of the
// address's budget.
func (c Check) Valid(user string) {
	if c.b == nil {
		return
	}
	c.b.mu.Lock()
	defer c.b.mu.Unlock()
	c.b.known.put(addressKey(c.addr), c.key, user, c.b.now())
	c.giveBack()
}

// Invalid records that the credential was refused: if it was known valid
// (since revoked, or expired), it is forgotten, so that its next checks
// spend the address's budget like any unknown credential's.
func (c Check) Invalid() {
	if c.b == nil {
		return
	}
	c.b.mu.Lock()
	defer c.b.mu.Unlock()
	c.b.known.remove(addressKey(c.addr), c.key)
}

// Undecided gives back the check's budget when the credential could be
// neither accepted nor refused (the identity provider unavailable, a store
// error).
func (c Check) Undecided() {
	if c.b == nil {
		return
	}
	c.b.mu.Lock()
	defer c.b.mu.Unlock()
	c.giveBack()
}

func (c Check) giveBack() {
	if !c.charged {
		return
	}
	if bk, ok := c.b.budgets.get(addressKey(c.addr)); ok {
		bk.tokens = min(bk.tokens+1, float64(c.b.lim.Burst))
	}
}

// Failed records one rejection and says whether to log it; if so, stood
// is how many rejections the line stands for (itself and those not logged
// since the last line). Its budget stays spent.
func (b *BadCredentials) Failed() (log bool, stood int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.log.AllowN(b.now(), 1) {
		b.suppressed++
		return false, 0
	}
	stood, b.suppressed = b.suppressed+1, 0
	return true, stood
}

// Addresses is how many addresses' budgets are kept (at most
// MaxThrottledAddresses).
func (b *BadCredentials) Addresses() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.budgets.len()
}

// KnownCredentials is how many verified credentials are remembered (at
// most MaxKnownCredentials).
func (b *BadCredentials) KnownCredentials() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.known.order.Len()
}

// addressKey is what a budget belongs to: an IPv4 address, or an IPv6
// address's /64, which one subscriber usually holds whole (a budget per
// IPv6 address would give each client 2^64 of them).
func addressKey(a netip.Addr) netip.Addr {
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.Addr()
	}
	return a
}

// bucket is a token bucket of checks.
type bucket struct {
	tokens float64
	last   time.Time
}

// take takes one check, or says how long until one is there.
func (k *bucket) take(now time.Time, l CredentialLimits) time.Duration {
	if d := now.Sub(k.last); d > 0 {
		k.tokens = min(k.tokens+d.Seconds()*l.PerSecond, float64(l.Burst))
		k.last = now
	}
	if k.tokens >= 1 {
		k.tokens--
		return 0
	}
	return time.Duration((1 - k.tokens) / l.PerSecond * float64(time.Second))
}

// lru is a map of at most max entries that forgets the least recently
// used one first. Not safe for concurrent use.
type lru[K comparable, V any] struct {
	max   int
	order *list.List // of *lruEntry, most recent first
	items map[K]*list.Element
}

type lruEntry[K comparable, V any] struct {
	key K
	val V
}

func newLRU[K comparable, V any](max int) lru[K, V] {
	return lru[K, V]{max: max, order: list.New(), items: map[K]*list.Element{}}
}

func (l *lru[K, V]) get(k K) (V, bool) {
	e, ok := l.items[k]
	if !ok {
		var zero V
		return zero, false
	}
	l.order.MoveToFront(e)
	return e.Value.(*lruEntry[K, V]).val, true
}

func (l *lru[K, V]) put(k K, v V) {
	if e, ok := l.items[k]; ok {
		e.Value.(*lruEntry[K, V]).val = v
		l.order.MoveToFront(e)
		return
	}
	l.items[k] = l.order.PushFront(&lruEntry[K, V]{key: k, val: v})
	if l.order.Len() > l.max {
		last := l.order.Back()
		l.order.Remove(last)
		delete(l.items, last.Value.(*lruEntry[K, V]).key)
	}
}

func (l *lru[K, V]) len() int { return l.order.Len() }

// knownCredentials remembers when each credential was last verified from
// each address: bounded per address and in total, and making room only
// by forgetting expired entries (see BadCredentials). Not safe for
// concurrent use.
type knownCredentials struct {
	order      *list.List // of *knownEntry, most recently verified first
	items      map[knownKey]*list.Element
	perAddress map[netip.Addr]int
	perUser    map[userAt]int
}

// userAt is a user at an address (its addressKey).
type userAt struct {
	addr netip.Addr
	user string
}

// knownKey is a credential's hash at an address (its addressKey).
type knownKey struct {
	addr netip.Addr
	hash [sha256.Size]byte
}

type knownEntry struct {
	key      knownKey
	user     string
	verified time.Time
}

func newKnownCredentials() knownCredentials {
	return knownCredentials{order: list.New(), items: map[knownKey]*list.Element{}, perAddress: map[netip.Addr]int{}, perUser: map[userAt]int{}}
}

// has reports whether the credential was verified from addr less than
// KnownCredentialTTL before now.
func (k *knownCredentials) has(addr netip.Addr, hash [sha256.Size]byte, now time.Time) bool {
	e, ok := k.items[knownKey{addr, hash}]
	return ok && now.Sub(e.Value.(*knownEntry).verified) < KnownCredentialTTL
}

// put records a verification of user's credential at now, if there is
// room once expired entries are forgotten.
func (k *knownCredentials) put(addr netip.Addr, hash [sha256.Size]byte, user string, now time.Time) {
	key := knownKey{addr, hash}
	if e, ok := k.items[key]; ok {
		e.Value.(*knownEntry).verified = now
		k.order.MoveToFront(e)
		return
	}
	for last := k.order.Back(); last != nil && now.Sub(last.Value.(*knownEntry).verified) >= KnownCredentialTTL; last = k.order.Back() {
		k.drop(last)
	}
	who := userAt{addr, user}
	if k.order.Len() >= MaxKnownCredentials || k.perAddress[addr] >= MaxKnownCredentialsPerAddress ||
		k.perUser[who] >= MaxKnownCredentialsPerUser {
		return
	}
	k.items[key] = k.order.PushFront(&knownEntry{key: key, user: user, verified: now})
	k.perAddress[addr]++
	k.perUser[who]++
}

func (k *knownCredentials) remove(addr netip.Addr, hash [sha256.Size]byte) {
	if e, ok := k.items[knownKey{addr, hash}]; ok {
		k.drop(e)
	}
}

func (k *knownCredentials) drop(e *list.Element) {
	entry := e.Value.(*knownEntry)
	k.order.Remove(e)
	delete(k.items, entry.key)
	decrement(k.perAddress, entry.key.addr)
	decrement(k.perUser, userAt{entry.key.addr, entry.user})
}

// decrement lowers m[key], deleting it at zero.
func decrement[K comparable](m map[K]int, key K) {
	if m[key]--; m[key] <= 0 {
		delete(m, key)
	}
}
