// Package faultproxy is a fault-injecting reverse proxy for the e2e tests:
// it sits on 127.0.0.1 between one process under test (a controller) and
// kube-apiserver, terminates TLS with a certificate of its own, forwards
// every request, and, for the requests a [Rule] matches, injects a fault:
//
//   - [Stall]: the request is held open and nothing is sent until the rule
//     is removed (a hung apiserver). A watch that is already streaming stops
//     forwarding events while its connection stays open; the events are
//     not lost: the proxy stops reading the apiserver's stream, so they
//     arrive, in order, when the stall ends (as when the apiserver's watch
//     cache falls behind).
//   - [Delay]: the request is forwarded after a fixed delay.
//   - [Respond]: the proxy answers itself with an HTTP status and a
//     metav1.Status body, e.g. 429 or 503 with Retry-After (an overloaded
//     apiserver or API Priority and Fairness rejecting the request).
//   - [Gone]: a watch is answered 200 with a single ERROR event carrying a
//     410 Expired Status, then ends, as kube-apiserver answers a watch from
//     a resourceVersion it no longer has; the client must relist.
//
// [Proxy.Cut] closes every connection and refuses new ones until
// [Proxy.Restore] (the process is partitioned from the apiserver);
// [Proxy.EndWatches] ends the open watches a rule matches (cleanly, so the
// client re-watches from its last resourceVersion, where a [Gone] rule can
// answer it).
//
// # Telling streams apart
//
// client-go multiplexes all of a process's requests, watches included, over
// one HTTP/2 connection. The proxy works at the HTTP level, not the TCP
// level: it serves HTTP/2 (and HTTP/1.1) itself, and each HTTP/2 stream
// reaches it as a request of its own, with its method, path, query and user
// agent. So one watch (the Leases) can be stalled while the others (Nodes,
// Pods) and every GET keep flowing, with no change to the process under
// test (no DISABLE_HTTP2). Only [Proxy.Cut] acts on connections. Upstream,
// the proxy opens its own connections to the apiserver.
//
// # Identity
//
// The process under test authenticates with its own bearer token, which the
// proxy forwards untouched. With [Options.UserAgentSuffix] the proxy appends
// a tag to each request's User-Agent, so the apiserver's audit log tells
// apart two replicas that share a binary and a token.
//
// # Bounds
//
// Every wait ends when the request's context ends (the client gave up or
// its connection was closed), when the proxy is closed, or after
// [Options.MaxHold] at the latest (a stall a test forgot to remove). The
// request log keeps at most [Options.MaxLog] entries and counts the rest.
// Everything listens and connects on loopback only.
package faultproxy
