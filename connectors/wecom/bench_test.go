package wecom

import (
	"testing"
)

// BenchmarkCallback: one genuine callback from WeCom's POST to its 200,
// which comes only after the message is in the durable outbox
// (signature, decryption, replay checks, SQLite write).
func BenchmarkCallback(b *testing.B) {
	f, api := newFake(b, "http://placeholder")
	cn := startConnTB(b, b.TempDir(), api)
	f.SetCallbackURL(testCorp, testAgent, cn.URL+callbackPath())
	cl := cn.Dial(b)
	cl.SignIn(FlowApp, login)
	ctx := b.Context()
	for b.Loop() {
		if _, err := f.SendText(ctx, testCorp, testAgent, testUser, "bench"); err != nil {
			b.Fatal(err)
		}
	}
}
