package frontend

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	datapb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/data"
	"github.com/tbhub/tbhub/services/serverkit/clientaddr"
)

// addrRecorder is a read service that records the client address each
// call resolves to, as its throttle would (behind one proxy, with the
// shared secret), and answers UNAUTHENTICATED.
type addrRecorder struct {
	datapb.UnimplementedTensorBoardDataProviderServer
	shared *clientaddr.Internal
	got    chan netip.Addr
}

func (r *addrRecorder) ListRuns(ctx context.Context, _ *datapb.ListRunsRequest) (*datapb.ListRunsResponse, error) {
	a, _ := clientaddr.Hops(1).FromGRPC(ctx, r.shared)
	r.got <- a
	return nil, status.Error(codes.Unauthenticated, "no")
}

// With --forwarding-secret, the frontend's calls name the browser (found
// with its own --trusted-proxy-hops), so the services throttle invalid
// credentials per browser rather than per frontend (issue 14 #9).
func TestCallsNameTheBrowser(t *testing.T) {
	const secret = "0123456789abcdef0123"
	shared, err := clientaddr.SharedInternal(secret)
	if err != nil {
		t.Fatal(err)
	}
	rec := &addrRecorder{shared: shared, got: make(chan netip.Addr, 1)}
	glis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	datapb.RegisterTensorBoardDataProviderServer(gs, rec)
	go gs.Serve(glis)
	t.Cleanup(gs.Stop)
	base := start(t, Config{ReadService: glis.Addr().String(), Insecure: true, CallTimeout: 5 * time.Second,
		TrustedProxyHops: 1, ForwardingSecret: secret})
	req, _ := http.NewRequest(http.MethodGet, base+"/experiment/e/data/runs", nil)
	req.Header.Set("X-Forwarded-For", "6.6.6.6, 198.51.100.7") // the client wrote 6.6.6.6; the proxy, the browser's address
	req.Header.Set("Authorization", "Bearer tbh_bad")
	var resp *http.Response
	for deadline := time.Now().Add(10 * time.Second); ; {
		if resp, err = http.DefaultClient.Do(req); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	select {
	case got := <-rec.got:
		if got != netip.MustParseAddr("198.51.100.7") {
			t.Errorf("the read service saw client %v, want the browser's 198.51.100.7", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the read service was not called (%s)", resp.Status)
	}
}
