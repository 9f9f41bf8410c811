package lifecycle

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tbhub/tbhub/services/serverkit/config"
)

// HTTPLimits bound what one client can hold of an HTTP server: how long
// it may take to send a request's headers and body, how long an idle
// connection is kept, and how many connections one client address may
// have open at once. Every tbhub HTTP server (tbhub serve, the write
// service, the frontend, the read service's metrics) is made with them by
// newHTTPServer; docs/operations.md lists them.
type HTTPLimits struct {
	// HeaderTimeout bounds reading a request's headers (ReadHeaderTimeout).
	HeaderTimeout time.Duration
	// BodyTimeout bounds reading a request's body, counted from the end
	// of its headers. gRPC calls served through the HTTP server are
	// exempt: their streams last as long as the call, and the write
	// service bounds them itself (idle and total deadlines of WriteBlob).
	BodyTimeout time.Duration
	// IdleTimeout closes a keep-alive connection idle this long.
	IdleTimeout time.Duration
	// MaxConnsPerIP bounds the open connections of one client IP address;
	// connections beyond it are closed at once. 0 is unlimited, right
	// behind a proxy (Cloud Run), where every connection comes from the
	// proxy's addresses.
	MaxConnsPerIP int
}

// DefaultHTTPLimits are the limits of a server behind Cloud Run's proxy;
// tbhub serve, reached directly, adds a per-address connection limit.
func DefaultHTTPLimits() HTTPLimits {
	return HTTPLimits{HeaderTimeout: 10 * time.Second, BodyTimeout: time.Minute, IdleTimeout: 2 * time.Minute}
}

// Settings describes --http-header-timeout, --http-body-timeout,
// --http-idle-timeout and --max-conns-per-ip for an assembly's flag set, defaulting to l's
// values.
func (l *HTTPLimits) Settings() []config.Setting {
	return []config.Setting{
		{Name: "http-header-timeout", Usage: "longest time a client may take to send an HTTP request's headers", Value: &l.HeaderTimeout},
		{Name: "http-body-timeout", Usage: "longest time a client may take to send an HTTP request's body (gRPC calls are exempt)", Value: &l.BodyTimeout},
		{Name: "http-idle-timeout", Usage: "an idle keep-alive connection is closed after this long", Value: &l.IdleTimeout},
		{Name: "max-conns-per-ip", Usage: "open connections allowed per client IP address (0: unlimited; keep 0 behind a proxy)", Value: &l.MaxConnsPerIP},
	}
}

// Validate reports limits that would leave a server unbounded.
func (l HTTPLimits) Validate() error {
	if l.HeaderTimeout <= 0 || l.BodyTimeout <= 0 || l.IdleTimeout <= 0 {
		return fmt.Errorf("lifecycle: HTTP header, body and idle timeouts must be positive")
	}
	if l.MaxConnsPerIP < 0 {
		return fmt.Errorf("lifecycle: max connections per IP must not be negative")
	}
	return nil
}

// newHTTPServer is the one place an HTTP server's timeouts are set.
func newHTTPServer(h http.Handler, l HTTPLimits) *http.Server {
	srv := &http.Server{
		Handler:           bodyDeadline(h, l.BodyTimeout),
		ReadHeaderTimeout: l.HeaderTimeout,
		IdleTimeout:       l.IdleTimeout,
	}
	srv.Protocols = new(http.Protocols)
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetUnencryptedHTTP2(true)
	return srv
}

// bodyDeadline gives each request's body a read deadline of timeout from
// now, except gRPC calls (see HTTPLimits.BodyTimeout). A client that is
// too slow has its request body fail and, over HTTP/1, its connection
// closed; over HTTP/2 only its stream is reset. Its answer is 408 whatever
// the handler makes of the failed read (a handler cannot tell a body cut
// off from one too large or malformed).
func bodyDeadline(h http.Handler, timeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isGRPC(r) {
			h.ServeHTTP(w, r)
			return
		}
		// Errors only where the connection cannot have deadlines
		// (not the case for net/http's own connections).
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(timeout))
		tw := &timedWriter{ResponseWriter: w, timeout: timeout}
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = &timedBody{ReadCloser: r.Body, w: tw}
		}
		h.ServeHTTP(tw, r)
	})
}

// timedBody tells its timedWriter when a read failed at the body deadline.
type timedBody struct {
	io.ReadCloser
	w *timedWriter
}

func (b *timedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		b.w.timedOut.Store(true)
	}
	return n, err
}

// timedWriter answers 408 in place of the handler's answer once the body
// has timed out, unless the handler had answered already.
type timedWriter struct {
	http.ResponseWriter
	timeout  time.Duration
	timedOut atomic.Bool
	wrote    bool // the status is sent
	replaced bool // the 408 is sent; the handler's writes are dropped
}

func (w *timedWriter) WriteHeader(code int) {
	if w.wrote {
		return
	}
	w.wrote = true
	if !w.timedOut.Load() {
		w.ResponseWriter.WriteHeader(code)
		return
	}
	w.replaced = true
	h := w.ResponseWriter.Header()
	for k := range h {
		delete(h, k)
	}
	h.Set("Connection", "close")
	http.Error(w.ResponseWriter, fmt.Sprintf("the request body was not received within %v", w.timeout), http.StatusRequestTimeout)
}

func (w *timedWriter) Write(p []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if w.replaced {
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

// Flush keeps handlers that stream (http.Flusher) streaming.
func (w *timedWriter) Flush() {
	if !w.replaced {
		_ = http.NewResponseController(w.ResponseWriter).Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *timedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func isGRPC(r *http.Request) bool {
	return r.ProtoMajor == 2 && strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc")
}

const tooManyConns = "HTTP/1.1 429 Too Many Requests\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\n" +
	"Content-Length: 46\r\n\r\ntoo many connections from this client address\n"

// perIPListener closes accepted connections beyond max per client IP.
type perIPListener struct {
	net.Listener
	max int
	mu  sync.Mutex
	n   map[string]int
}

// limitPerIP wraps lis so that one IP address holds at most max open
// connections; max 0 returns lis as it is.
func limitPerIP(lis net.Listener, max int) net.Listener {
	if max <= 0 {
		return lis
	}
	return &perIPListener{Listener: lis, max: max, n: map[string]int{}}
}

func (l *perIPListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := c.RemoteAddr().String()
		if host, _, err := net.SplitHostPort(ip); err == nil {
			ip = host
		}
		l.mu.Lock()
		full := l.n[ip] >= l.max
		if !full {
			l.n[ip]++
		}
		l.mu.Unlock()
		if full {
			// Answered and closed before anything is read: an HTTP/1
			// client reads a 429, any other one a closed connection; the
			// server keeps no descriptor for it.
			c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
			io.WriteString(c, tooManyConns)
			c.Close()
			continue
		}
		return &countedConn{Conn: c, release: func() { l.release(ip) }}, nil
	}
}

func (l *perIPListener) release(ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n[ip]--; l.n[ip] <= 0 {
		delete(l.n, ip)
	}
}

// countedConn gives its slot back once, on the first Close.
type countedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *countedConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}
