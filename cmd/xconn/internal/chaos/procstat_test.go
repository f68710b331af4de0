package chaos

import (
	"os"
	"testing"
)

func TestMetricValue(t *testing.T) {
	page := []byte(`# HELP go_goroutines Number of goroutines that currently exist.
# TYPE go_goroutines gauge
go_goroutines_other 3
go_goroutines 42
go_threads{x="y"} 7
process_open_fds 1.5e+01
`)
	tests := []struct {
		name string
		want float64
		ok   bool
	}{
		{"go_goroutines", 42, true},
		{"process_open_fds", 15, true},
		{"go_threads", 0, false}, // labelled samples are not matched
		{"go_gc", 0, false},
	}
	for _, tt := range tests {
		got, ok := MetricValue(page, tt.name)
		if got != tt.want || ok != tt.ok {
			t.Errorf("MetricValue(%q) = %v, %v; want %v, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
	if _, ok := MetricValue([]byte("go_goroutines NaNx\n"), "go_goroutines"); ok {
		t.Error("a bad value parsed")
	}
}

func FuzzMetricValue(f *testing.F) {
	f.Add([]byte("go_goroutines 42\n"), "go_goroutines")
	f.Add([]byte("# c\nx{a=\"b\"} 1\nx 2"), "x")
	f.Add([]byte("x\t\n"), "x")
	f.Fuzz(func(t *testing.T, page []byte, name string) {
		v, ok := MetricValue(page, name)
		if !ok && v != 0 {
			t.Fatalf("value %v without ok", v)
		}
	})
}

func TestFDCount(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("no /proc on this system")
	}
	before, err := FDCount(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	after, err := FDCount(os.Getpid())
	f.Close()
	if err != nil || after != before+1 {
		t.Fatalf("descriptors %d then %d (%v)", before, after, err)
	}
	if _, err := FDCount(-1); err == nil {
		t.Fatal("no error for a missing process")
	}
}

func TestGrowing(t *testing.T) {
	tests := []struct {
		xs   []int
		min  int
		want bool
	}{
		{nil, 1, false},
		{[]int{5}, 0, false},
		{[]int{20, 21, 22, 23, 24}, 4, true},
		{[]int{20, 20, 22, 22, 25}, 4, true},
		{[]int{20, 21, 22, 23, 24}, 5, false}, // not enough in total
		{[]int{20, 26, 22, 27, 24}, 2, false}, // noise
		{[]int{24, 23, 22}, 1, false},
		{[]int{20, 20, 20, 20}, 0, false},         // flat
		{[]int{22, 24, 27, 28, 28, 28}, 5, false}, // warmed up, then level (a CI run)
		{[]int{22, 24, 27, 28, 29, 30}, 5, true},  // still growing
	}
	for _, tt := range tests {
		if got := Growing(tt.xs, tt.min); got != tt.want {
			t.Errorf("Growing(%v, %d) = %v, want %v", tt.xs, tt.min, got, tt.want)
		}
	}
}
