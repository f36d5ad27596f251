// Package httpserver serves the example programs' plain-HTTP endpoints
// (/healthz, /readyz, /metrics) with bounded resources: every connection
// has read, write and idle timeouts and a cap on header bytes, so that a
// slow or idle client cannot hold a connection, a goroutine and its
// buffers forever (net/http's zero values mean no limit). The endpoints
// are small GETs answered from memory; the limits are far above what a
// kubelet probe or a Prometheus scrape (10 s timeout by default) needs.
package httpserver

import (
	"errors"
	"net"
	"net/http"
	"time"
)

// The limits of every server New returns.
const (
	// ReadHeaderTimeout bounds reading a request's headers.
	ReadHeaderTimeout = 10 * time.Second
	// ReadTimeout bounds reading a whole request, body included.
	ReadTimeout = 30 * time.Second
	// WriteTimeout bounds the time from the end of the request headers to
	// the end of the response.
	WriteTimeout = 30 * time.Second
	// IdleTimeout bounds how long a keep-alive connection waits for its
	// next request.
	IdleTimeout = 2 * time.Minute
	// MaxHeaderBytes bounds a request's header size.
	MaxHeaderBytes = 64 << 10
)

// New returns a server of h on addr with the package's limits.
func New(addr string, h http.Handler) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
	}
}

// Serve serves h on ln (a server from New) on a goroutine of its own, and
// returns the function that closes it. onErr, if not nil, receives the
// error that ends serving, unless that is the close.
func Serve(ln net.Listener, h http.Handler, onErr func(error)) (stop func()) {
	srv := New(ln.Addr().String(), h)
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) && onErr != nil {
			onErr(err)
		}
	}()
	return func() { _ = srv.Close() }
}

// Listen listens on addr and serves h there as Serve does: a program
// calls it before it starts its work, so that an address it cannot bind
// stops it at once instead of leaving it running without its endpoints.
func Listen(addr string, h http.Handler, onErr func(error)) (bound net.Addr, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	return ln.Addr(), Serve(ln, h, onErr), nil
}
