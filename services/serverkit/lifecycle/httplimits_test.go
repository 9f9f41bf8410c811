package lifecycle

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// serveLimited runs a process with one HTTP server under l whose handler
// reads the whole body, and returns its address.
func serveLimited(t *testing.T, l HTTPLimits) string {
	t.Helper()
	return serveHandler(t, l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		if err != nil {
			http.Error(w, "body: "+err.Error(), http.StatusRequestTimeout)
			return
		}
		fmt.Fprintf(w, "%d bytes", n)
	}))
}

// serveHandler runs a process with one HTTP server under l serving h, and
// returns its address.
func serveHandler(t *testing.T, l HTTPLimits, h http.Handler) string {
	t.Helper()
	lis, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := New(time.Second, nil)
	if err := p.LimitHTTP(l); err != nil {
		t.Fatal(err)
	}
	p.HTTP(lis, h)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return lis.Addr().String()
}

// safety bounds how long a test waits for the server to act; the limits
// under test are far shorter, so reaching it means the limit did nothing.
const safety = 30 * time.Second

// A client that sends its headers and then one byte of a 100,000-byte
// body is cut off after the body timeout instead of holding its
// connection (and the server's descriptor) forever.
func TestSlowBodyIsCutOff(t *testing.T) {
	l := DefaultHTTPLimits()
	l.BodyTimeout = 100 * time.Millisecond
	addr := serveLimited(t, l)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\nx")
	conn.SetReadDeadline(time.Now().Add(safety))
	_, err = io.ReadAll(conn)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the server still held the connection of a stalled body after %v", safety)
	}
}

// A client trickling its body a byte at a time is cut off as well: the
// deadline is for the whole body, not between bytes.
func TestTricklingBodyIsCutOff(t *testing.T) {
	l := DefaultHTTPLimits()
	l.BodyTimeout = 200 * time.Millisecond
	addr := serveLimited(t, l)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n")
	resp := make(chan *http.Response, 1)
	go func() {
		r, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err == nil {
			resp <- r
		}
		close(resp)
	}()
	for i := 0; i < 10_000; i++ { // bounded: at most 10,000 bytes, 10,000 ticks
		select {
		case r, ok := <-resp:
			if ok && r.StatusCode == http.StatusOK {
				t.Fatalf("the trickled body was accepted")
			}
			return
		case <-time.After(10 * time.Millisecond):
		}
		if _, err := conn.Write([]byte("x")); err != nil {
			return // closed by the server
		}
	}
	t.Fatalf("a body trickled for 10,000 ticks was never cut off")
}

// One address holds at most MaxConnsPerIP connections; a connection over
// the limit is closed at once, and a slot freed is reusable.
func TestConnectionsPerIP(t *testing.T) {
	l := DefaultHTTPLimits()
	l.MaxConnsPerIP = 2
	addr := serveLimited(t, l)
	get := func(c net.Conn) error {
		c.SetDeadline(time.Now().Add(safety))
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		r, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return err
		}
		r.Body.Close()
		if r.StatusCode != http.StatusOK {
			return fmt.Errorf("%s", r.Status)
		}
		return nil
	}
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := get(c); err != nil {
			t.Fatalf("connection within the limit: %v", err)
		}
		held = append(held, c)
	}
	extra, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	if err := get(extra); err == nil || !strings.Contains(err.Error(), "429") {
		t.Fatalf("a third connection from one address: %v, want 429; the limit is 2", err)
	}
	held[0].Close()
	// The server notices the close when its read fails; retry until then.
	for i := 0; ; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		err = get(c)
		c.Close()
		if err == nil {
			break
		}
		if i == 1000 {
			t.Fatalf("the freed slot was never given back: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A body cut off by the body timeout is answered 408 whatever status the
// handler chose for its failed read (the handshake said 413, "too large",
// the JSON routes 400 with a message about the body's content), as
// docs/operations.md promises.
func TestCutOffBodyIsAnswered408(t *testing.T) {
	l := DefaultHTTPLimits()
	l.BodyTimeout = 100 * time.Millisecond
	addr := serveHandler(t, l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20)); err != nil {
			http.Error(w, "request body too large or unreadable", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "want a JSON body", http.StatusBadRequest)
	}))
	for _, c := range []struct {
		request string
		want    int
	}{
		{"POST /api/uploader HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\nx", http.StatusRequestTimeout},
		// A body that arrives in time keeps the handler's own answer.
		{"POST /api/uploader HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx", http.StatusBadRequest},
	} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		io.WriteString(conn, c.request)
		conn.SetReadDeadline(time.Now().Add(safety))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%q: no answer: %v", c.request, err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != c.want {
			t.Errorf("%q was answered %d %q, want %d", c.request, resp.StatusCode, body, c.want)
		}
	}
}
