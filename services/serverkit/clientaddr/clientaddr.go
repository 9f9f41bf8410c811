// Package clientaddr finds the address a call came from, as far as a
// server can trust it: per-client limits (the throttle of invalid
// credentials) key on it.
//
// Without proxies (Hops 0) the address is the connection's peer, and
// X-Forwarded-For is ignored: any client can write that header. Behind N
// proxies that each append the address they saw to X-Forwarded-For
// (Cloud Run's front end is one: N = 1), the client is the Nth entry from
// the right; what is further left was written by the client itself.
//
// A loopback peer is a client like any other (127.0.0.2 is not
// 127.0.0.1): a proxy on the same host needs Hops like any proxy. The
// exception is a call from tbhub itself that serves an HTTP client: tbhub
// serve's HTTP API calling its own gRPC server, or the frontend calling
// the read and write services. Such a call carries a secret (Internal: a
// random one per process, or --forwarding-secret shared by the services)
// and the HTTP client's address in tbhub-client-addr metadata, which
// proxies leave alone; the server trusts that address. A marked call with
// no address has no client address (ok false) and per-client limits do not
// apply to it.
package clientaddr

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/tbhub/tbhub/services/serverkit/config"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
)

// Header is the header (and, in lower case, the gRPC metadata key) that
// proxies append the addresses they saw to.
const Header = "X-Forwarded-For"

const mdKey = "x-forwarded-for"

// clientKey carries the HTTP client's address on marked calls.
const clientKey = "tbhub-client-addr"

// Hops is how many proxies in front of the server append to
// X-Forwarded-For and are trusted to: 0 (the default) trusts none.
type Hops int

// Setting describes --trusted-proxy-hops for an assembly's flag set.
func (h *Hops) Setting() config.Setting {
	return config.Setting{Name: "trusted-proxy-hops", Usage: "proxies in front of this server that append the client's address to X-Forwarded-For (Cloud Run: 1); 0 trusts only the connection's peer (default 0)", Value: func(v string) error {
		var n int
		if _, err := fmt.Sscan(v, &n); err != nil || n < 0 || n > 16 {
			return fmt.Errorf("want a number of proxies from 0 to 16, not %q", v)
		}
		*h = Hops(n)
		return nil
	}}
}

// Resolve is the client's address given the connection's peer address
// (host:port or host) and the X-Forwarded-For values the call carried:
// the entry h hops from the right if there are that many and it is an
// address, else the peer's; ok is false if that is not an IP address
// either.
func (h Hops) Resolve(peerAddr string, forwarded []string) (addr netip.Addr, ok bool) {
	if h > 0 {
		if entry, ok := fromRight(forwarded, int(h)); ok {
			if a, err := parse(entry); err == nil {
				return a, true
			}
		}
	}
	p, err := parse(peerAddr)
	return p, err == nil
}

// fromRight returns the nth comma-separated entry (n >= 1) from the right
// of X-Forwarded-For values taken in order, if there are that many. It
// walks back from the end without splitting the chain: it runs for every
// call, and only the last few entries matter.
func fromRight(values []string, n int) (string, bool) {
	for i := len(values) - 1; i >= 0; i-- {
		v := values[i]
		for {
			j := strings.LastIndexByte(v, ',')
			if n--; n == 0 {
				return strings.TrimSpace(v[j+1:]), true
			}
			if j < 0 {
				break
			}
			v = v[:j]
		}
	}
	return "", false
}

// parse reads an IP address, with or without a port.
func parse(s string) (netip.Addr, error) {
	if host, _, err := net.SplitHostPort(s); err == nil {
		s = host
	}
	a, err := netip.ParseAddr(strings.Trim(s, "[]"))
	return a.Unmap(), err
}

// FromGRPC resolves the address of the gRPC call in ctx (its peer and
// its x-forwarded-for metadata). A call that in marks as the process's
// own (in may be nil) has the address it forwarded, or none.
func (h Hops) FromGRPC(ctx context.Context, in *Internal) (netip.Addr, bool) {
	md, _ := metadata.FromIncomingContext(ctx)
	if in.marked(md) {
		if v := md.Get(clientKey); len(v) == 1 {
			a, err := parse(v[0])
			return a, err == nil
		}
		return netip.Addr{}, false
	}
	p, ok := peer.FromContext(ctx)
	if !ok || p.Addr == nil {
		return netip.Addr{}, false
	}
	return h.Resolve(p.Addr.String(), md.Get(mdKey))
}

// FromHTTP resolves the address of an HTTP request.
func (h Hops) FromHTTP(r *http.Request) (netip.Addr, bool) {
	return h.Resolve(r.RemoteAddr, r.Header.Values(Header))
}

type addrKey struct{}

// Middleware puts each request's client address (FromHTTP) in its
// context, for ForwardUnary and ForwardStream to pass on.
func (h Hops) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a, ok := h.FromHTTP(r); ok {
			r = r.WithContext(context.WithValue(r.Context(), addrKey{}, a))
		}
		next.ServeHTTP(w, r)
	})
}

// FromContext is the client address Middleware put in ctx.
func FromContext(ctx context.Context) (netip.Addr, bool) {
	a, ok := ctx.Value(addrKey{}).(netip.Addr)
	return a, ok
}

// Internal marks the calls tbhub makes to its own gRPC servers on behalf
// of an HTTP client, with a secret, so that the server trusts the client
// address they forward. Its methods accept a nil *Internal (no such
// calls).
type Internal struct {
	secret string
}

const internalKey = "tbhub-internal-call"

// MinSecretBytes is the shortest --forwarding-secret.
const MinSecretBytes = 16

// NewInternal returns a marker with a fresh random secret, for the calls
// a process makes to itself.
func NewInternal() *Internal {
	b := make([]byte, MinSecretBytes)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return &Internal{secret: hex.EncodeToString(b)}
}

// SharedInternal returns the marker of secret (--forwarding-secret),
// shared by the frontend and the services it calls; nil if secret is
// empty (no calls are trusted to forward an address).
func SharedInternal(secret string) (*Internal, error) {
	if secret == "" {
		return nil, nil
	}
	if len(secret) < MinSecretBytes {
		return nil, fmt.Errorf("clientaddr: the forwarding secret must have at least %d bytes", MinSecretBytes)
	}
	return &Internal{secret: secret}, nil
}

// SecretSetting describes --forwarding-secret, setting *p, for an
// assembly's flag set; it defaults to *p (empty: off).
func SecretSetting(p *string) config.Setting {
	return config.Setting{Name: "forwarding-secret", Usage: "secret shared by the frontend and the read and write services: the frontend's calls carry it with the browser's address, which per-client limits then key on (>= 16 bytes; off if empty)", Value: p}
}

func (in *Internal) marked(md metadata.MD) bool {
	v := md.Get(internalKey)
	return in != nil && len(v) == 1 && subtle.ConstantTimeCompare([]byte(v[0]), []byte(in.secret)) == 1
}

// forward marks an outgoing call and sets its client address to the one
// Middleware found (none if it found none), replacing what was there.
func (in *Internal) forward(ctx context.Context) context.Context {
	if in == nil {
		return ctx
	}
	md, _ := metadata.FromOutgoingContext(ctx)
	md = md.Copy()
	md.Set(internalKey, in.secret)
	md.Delete(clientKey)
	if a, ok := ctx.Value(addrKey{}).(netip.Addr); ok {
		md.Set(clientKey, a.String())
	}
	return metadata.NewOutgoingContext(ctx, md)
}

// Unary and Stream are the client interceptors of a connection from an
// HTTP handler (behind Middleware) to a tbhub gRPC server that shares the
// secret: they tell the server whose request each call serves, so that
// per-client limits apply to the HTTP client rather than to the caller.
func (in *Internal) Unary() grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		return invoker(in.forward(ctx), method, req, reply, cc, opts...)
	}
}

// Stream: see Unary.
func (in *Internal) Stream() grpc.StreamClientInterceptor {
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		return streamer(in.forward(ctx), desc, cc, method, opts...)
	}
}
