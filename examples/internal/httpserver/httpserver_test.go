package httpserver

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestNewBounded: every limit is set (net/http's zero values mean none).
func TestNewBounded(t *testing.T) {
	srv := New(":0", http.NotFoundHandler())
	for _, f := range []struct {
		name string
		ok   bool
	}{
		{"ReadHeaderTimeout", srv.ReadHeaderTimeout == ReadHeaderTimeout && ReadHeaderTimeout > 0},
		{"ReadTimeout", srv.ReadTimeout == ReadTimeout && ReadTimeout > 0},
		{"WriteTimeout", srv.WriteTimeout == WriteTimeout && WriteTimeout > 0},
		{"IdleTimeout", srv.IdleTimeout == IdleTimeout && IdleTimeout > 0},
		{"MaxHeaderBytes", srv.MaxHeaderBytes == MaxHeaderBytes && MaxHeaderBytes > 0},
	} {
		if !f.ok {
			t.Errorf("New(): %s not bounded", f.name)
		}
	}
}

// TestListen serves a request, rejects an oversized header, and fails at
// once on an address it cannot bind.
func TestListen(t *testing.T) {
	addr, stop, err := Listen("127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}), func(err error) { t.Errorf("serving: %v", err) })
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	resp, err := http.Get("http://" + addr.String() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "ok" {
		t.Errorf("GET = %d %q, want 200 ok", resp.StatusCode, body)
	}

	conn, err := net.Dial("tcp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	big := strings.Repeat("x", 2*MaxHeaderBytes)
	if _, err := io.WriteString(conn, "GET / HTTP/1.1\r\nHost: a\r\nX-Big: "+big+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(conn).ReadString('\n')
	if !strings.Contains(line, "431") {
		t.Errorf("oversized header: status line %q, want 431", line)
	}

	if _, _, err := Listen(addr.String(), http.NotFoundHandler(), nil); err == nil {
		t.Errorf("Listen(%s) on a bound address = nil error, want one", addr)
	}
}
