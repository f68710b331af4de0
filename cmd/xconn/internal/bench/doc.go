// Package bench is the measurement harness behind "xconn bench": a registry
// of scenarios that drive the connector SDK and the host in one process over
// loopback, each next to a baseline measured in the same run (raw
// coder/websocket echo, plain SQLite transactions, plain loopback HTTP
// io.Copy), with throughput, p50/p99 latency, allocations per operation,
// peak RSS and the ratio to the baseline, printed as a table or JSON.
//
// The package is owned by the bench command. Nothing in it is package-level
// mutable state; a Runner may be used by one goroutine at a time.
package bench
