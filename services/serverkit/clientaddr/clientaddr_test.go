package clientaddr

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
)

// X-Forwarded-For is honoured only for the hops the operator trusts,
// counted from the right; otherwise the peer is the client, loopback or
// not.
func TestResolve(t *testing.T) {
	for _, c := range []struct {
		hops      Hops
		peer      string
		forwarded []string
		want      string
	}{
		{0, "192.0.2.9:5000", []string{"198.51.100.1"}, "192.0.2.9"},
		{0, "127.0.0.1:5000", []string{"198.51.100.1"}, "127.0.0.1"},
		{0, "[::1]:5000", nil, "::1"},
		{1, "169.254.1.1:5000", []string{"198.51.100.1"}, "198.51.100.1"},
		{1, "169.254.1.1:5000", []string{"6.6.6.6, 198.51.100.1"}, "198.51.100.1"},
		{1, "169.254.1.1:5000", []string{"6.6.6.6", "198.51.100.1"}, "198.51.100.1"},
		{2, "10.0.0.1:5000", []string{"6.6.6.6, 198.51.100.1, 10.0.0.2"}, "198.51.100.1"},
		{1, "169.254.1.1:5000", []string{"[2001:db8::1]:443"}, "2001:db8::1"},
		{1, "169.254.1.1:5000", []string{"::ffff:198.51.100.1"}, "198.51.100.1"},
		// Fewer entries than hops, or garbage: the peer.
		{2, "10.0.0.1:5000", []string{"198.51.100.1"}, "10.0.0.1"},
		{1, "10.0.0.1:5000", []string{"unknown"}, "10.0.0.1"},
		{1, "10.0.0.1:5000", nil, "10.0.0.1"},
	} {
		got, ok := c.hops.Resolve(c.peer, c.forwarded)
		if !ok || got.String() != c.want {
			t.Errorf("hops %d peer %s forwarded %q: %v %v, want %s", c.hops, c.peer, c.forwarded, got, ok, c.want)
		}
	}
	if _, ok := Hops(0).Resolve("@", nil); ok {
		t.Error("a peer that is no IP address resolved")
	}
}

// The process's own calls, marked by its Internal, carry the HTTP
// client's address; a call claiming to be internal with another secret is
// an ordinary client.
func TestInternalCallsForwardTheHTTPClient(t *testing.T) {
	in := NewInternal()
	var outgoing metadata.MD
	invoke := func(ctx context.Context, _ string, _, _ any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
		outgoing, _ = metadata.FromOutgoingContext(ctx)
		return nil
	}
	// Behind one proxy: the browser at 198.51.100.7, the proxy at 10.0.0.1.
	var ctx context.Context
	Hops(1).Middleware(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { ctx = r.Context() })).ServeHTTP(
		httptest.NewRecorder(), func() *http.Request {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr, r.Header[Header] = "10.0.0.1:1234", []string{"6.6.6.6, 198.51.100.7"}
			return r
		}())
	if err := in.Unary()(ctx, "/m", nil, nil, nil, invoke); err != nil {
		t.Fatal(err)
	}
	loopback := &peer.Peer{Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4000}}
	incoming := peer.NewContext(metadata.NewIncomingContext(context.Background(), outgoing), loopback)
	if got, ok := Hops(1).FromGRPC(incoming, in); !ok || got != netip.MustParseAddr("198.51.100.7") {
		t.Errorf("internal call: %v %v, want the browser's 198.51.100.7", got, ok)
	}
	if got, ok := Hops(0).FromGRPC(incoming, NewInternal()); !ok || got != netip.MustParseAddr("127.0.0.1") {
		t.Errorf("a call marked with another process's secret: %v %v, want its peer", got, ok)
	}
	// An internal call serving no HTTP request has no client address.
	if err := in.Unary()(metadata.AppendToOutgoingContext(context.Background(), "tbhub-client-addr", "6.6.6.6"), "/m", nil, nil, nil, invoke); err != nil {
		t.Fatal(err)
	}
	incoming = peer.NewContext(metadata.NewIncomingContext(context.Background(), outgoing), loopback)
	if got, ok := Hops(0).FromGRPC(incoming, in); ok {
		t.Errorf("an internal call without a client: %v, want none", got)
	}
}

// The frontend and the services share --forwarding-secret: a proxy
// between them appending its own address to X-Forwarded-For (Cloud Run's
// front end) does not change the forwarded client.
func TestSharedSecretSurvivesAProxy(t *testing.T) {
	if _, err := SharedInternal("short"); err == nil {
		t.Error("a 5-byte secret was accepted")
	}
	if in, err := SharedInternal(""); in != nil || err != nil {
		t.Errorf("no secret: %v %v, want none", in, err)
	}
	front, _ := SharedInternal("0123456789abcdef")
	back, _ := SharedInternal("0123456789abcdef")
	var outgoing metadata.MD
	invoke := func(ctx context.Context, _ string, _, _ any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
		outgoing, _ = metadata.FromOutgoingContext(ctx)
		return nil
	}
	ctx := context.WithValue(context.Background(), addrKey{}, netip.MustParseAddr("198.51.100.7"))
	if err := front.Unary()(ctx, "/m", nil, nil, nil, invoke); err != nil {
		t.Fatal(err)
	}
	outgoing.Append("x-forwarded-for", "203.0.113.50") // the frontend's egress, appended by the proxy
	incoming := peer.NewContext(metadata.NewIncomingContext(context.Background(), outgoing),
		&peer.Peer{Addr: &net.TCPAddr{IP: net.IPv4(169, 254, 1, 1), Port: 4000}})
	if got, ok := Hops(1).FromGRPC(incoming, back); !ok || got != netip.MustParseAddr("198.51.100.7") {
		t.Errorf("through the proxy: %v %v, want the browser's 198.51.100.7", got, ok)
	}
	if got, ok := Hops(1).FromGRPC(incoming, nil); !ok || got != netip.MustParseAddr("203.0.113.50") {
		t.Errorf("a service without the secret: %v %v, want the frontend's 203.0.113.50", got, ok)
	}
}
