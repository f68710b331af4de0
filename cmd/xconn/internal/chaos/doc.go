// Package chaos holds the parts of "xconn chaos" that are not about
// processes: a loopback TCP proxy that injects faults (drops, stalls,
// half-closes, slow links) and scans every byte it forwards for canary
// secrets, a seeded fault schedule, an invariant checker that turns what a
// run observed into the final "invariants:" line, and readers of a child
// process's descriptor count and goroutine gauge.
//
// Nothing here starts processes; cmd/xconn does, and drives these parts.
package chaos
