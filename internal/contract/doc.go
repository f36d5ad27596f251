// Package contract holds the tests that enforce two of the project's rules
// by parsing the source with go/ast, so a violation fails `go test ./...`
// before review:
//
//   - The library is caller-driven: no library package may start
//     goroutines, use channels, sleep, read the wall clock, log, or do I/O.
//     Time is always an argument.
//   - An Example uses only what a user can import: no file that declares an
//     Example (anywhere in the repository, examples/ and nested modules
//     included) imports an internal package of this module.
package contract
