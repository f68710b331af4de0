package host

import (
	"encoding/json"
	goruntime "runtime"
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

// BenchmarkChannelHeap reports the live heap per signed-in channel
// ("heap-B/ch", host and fake connector together; the fake keeps little per
// channel). Profile what the host keeps with
//
//	go test -run '^$' -bench ChannelHeap -memprofile mem.out -memprofilerate 1 ./host
//	go tool pprof -sample_index=inuse_space -top mem.out
func BenchmarkChannelHeap(b *testing.B) {
	const n = 200
	f := newFakeConnector(b, "im.fake", "")
	th := newTestHost(b, "", nil)
	th.admitOnline(b, f)
	th.signinRoom(b, "warm", "im.fake")
	var perChannel float64
	for b.Loop() {
		var m0, m1 goruntime.MemStats
		goruntime.GC()
		goruntime.ReadMemStats(&m0)
		for range n {
			th.signinRoom(b, "bench", "im.fake")
		}
		goruntime.GC()
		goruntime.ReadMemStats(&m1)
		perChannel = (float64(m1.HeapAlloc) - float64(m0.HeapAlloc)) / n
	}
	b.ReportMetric(perChannel, "heap-B/ch")
}
