package timerpool

import (
	"testing"
	"testing/synctest"
	"time"
)

// A reused timer fires after its new duration, never with a value left
// from its earlier use.
func TestReusedTimerFiresOnTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var p Pool
		first := p.Get(time.Millisecond)
		time.Sleep(2 * time.Millisecond) // it fired; its value is not read
		p.Put(first)
		start := time.Now()
		second := p.Get(time.Second)
		select {
		case <-second.C:
			if d := time.Since(start); d != time.Second {
				t.Fatalf("reused timer fired after %v, want 1s", d)
			}
		case <-time.After(2 * time.Second):
			t.Fatal("reused timer did not fire")
		}
		p.Put(second)
	})
}

func ExamplePool() {
	var timers Pool
	t := timers.Get(time.Minute)
	defer timers.Put(t)
	select {
	case <-t.C:
		// timed out
	default:
	}
}
