// Package contract holds the test that enforces the library's caller-driven
// rule: no library package may start goroutines, use
// channels, sleep, read the wall clock, log, or do I/O. Time is always an
// argument. The test parses the source with go/ast, so a violation fails
// `go test ./...` before review.
package contract
