package chaos

import (
	"testing"
	"time"
)

func TestScheduleReplaysASeed(t *testing.T) {
	kinds := []Fault{KillConnector, KillHost, Drop, Stall, HalfClose, NewConnectorID, SlowConsumer, HostOutage}
	draw := func(seed uint64) []string {
		s := NewSchedule(seed, time.Second, 5*time.Second, kinds)
		var out []string
		for range 200 {
			gap, f := s.Next()
			if gap < time.Second || gap >= 5*time.Second {
				t.Fatalf("gap %v out of range", gap)
			}
			out = append(out, string(f)+gap.String()+s.Duration(time.Second, 2*time.Second).String())
		}
		return out
	}
	a, b, c := draw(7), draw(7), draw(8)
	same := true
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("seed 7 drew %q then %q at %d", a[i], b[i], i)
		}
		same = same && a[i] == c[i]
	}
	if same {
		t.Fatal("seeds 7 and 8 drew the same schedule")
	}
	// Every kind is drawn, the outage least often.
	s := NewSchedule(1, time.Second, 2*time.Second, kinds)
	n := map[Fault]int{}
	for range 4000 {
		_, f := s.Next()
		n[f]++
	}
	for _, k := range kinds {
		if n[k] == 0 {
			t.Fatalf("%s never drawn: %v", k, n)
		}
	}
	if n[HostOutage] >= n[Drop] {
		t.Fatalf("outage as frequent as a drop: %v", n)
	}
}
