package host

import (
	"encoding/json"
	"testing"
)

// BenchmarkInvoke measures one tool.invoke round trip through the host
// (channel resolution from the store, envelope, socket, ack matching)
// against the fake connector on loopback, SQLite store.
func BenchmarkInvoke(b *testing.B) {
	f := newFakeConnector(b, "im.fake", "")
	th := newTestHost(b, "", nil)
	th.admitOnline(b, f)
	th.signinRoom(b, "bench", "im.fake")
	args := json.RawMessage(`{"text":"hi"}`)
	ctx := ctxT(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := th.Invoke(ctx, "bench", "", "im_fake_send", args, "c"); err != nil {
			b.Fatal(err)
		}
	}
}
