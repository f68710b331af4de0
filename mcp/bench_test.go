package mcp_test

import (
	"fmt"
	"testing"
)

// BenchmarkPostToRead measures one user message end to end: a web chat
// page posts it, the connector publishes it durably, the host delivers it
// to the Inbox, and an MCP client (the Go SDK, in memory) waiting in
// messages_read gets it; the op ends when the call returns. With max 1
// the read returns at once; with the default max it lingers for a
// follow-up message of the same channel (50 ms, followUpWait).
//
//	go test -run ^$ -bench PostToRead -benchtime 100x ./mcp/
func BenchmarkPostToRead(b *testing.B) {
	s := newSystem(b)
	c := s.connect()
	c.signInRoom("bench")
	page := s.browser("bench", testAccessCode)
	for _, max := range []int{1, 10} {
		b.Run(fmt.Sprintf("max=%d", max), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				id := page.post(fmt.Sprintf("message %d", i))
				msgs, _ := c.readMessages(map[string]any{"wait_seconds": 10, "max": max})
				if len(msgs) != 1 || msgs[0].MessageID != id {
					b.Fatalf("read %+v, want %s", msgs, id)
				}
			}
		})
	}
}
