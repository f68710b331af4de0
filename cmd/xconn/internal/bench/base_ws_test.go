package bench

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestEchoClientOutlivesCancelledCalls pins the fix of a hang of `xconn
// bench`: the load generator cancels its context with round trips in
// flight, coder/websocket closed the socket when a write's context ended,
// and the next round trip then waited forever on the reader's full queue.
func TestEchoClientOutlivesCancelledCalls(t *testing.T) {
	frame, err := invokeFrame(16)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := listen(echoHandler())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const inflight = 2
	ec, err := dialEcho(ctx, srv.url, frame, inflight)
	if err != nil {
		t.Fatal(err)
	}
	defer ec.close()

	// A call whose context has already ended fails alone (or wins the
	// race with its echo), leaving the connection to the others.
	done, stop := context.WithCancel(ctx)
	stop()
	if err := ec.roundTrip(done); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled round trip: %v, want context.Canceled", err)
	}
	for i := range 2 * inflight {
		if err := ec.roundTrip(ctx); err != nil {
			t.Fatalf("round trip %d after a cancelled one: %v", i, err)
		}
	}

	// Once the connection is gone, calls fail instead of waiting on a
	// queue nobody drains.
	_ = ec.c.CloseNow()
	<-ec.done
	for i := range 2 * (inflight + 1) {
		if err := ec.roundTrip(ctx); err == nil {
			t.Fatalf("round trip %d on a closed connection succeeded", i)
		}
	}
}
