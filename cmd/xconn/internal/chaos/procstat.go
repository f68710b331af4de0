package chaos

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// FDCount returns the number of open descriptors of process pid
// (entries of /proc/<pid>/fd; Linux only).
func FDCount(pid int) (int, error) {
	es, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return 0, fmt.Errorf("chaos: descriptors of %d: %w", pid, err)
	}
	return len(es), nil
}

// maxMetricsLine bounds one line of a metrics page.
const maxMetricsLine = 64 << 10

// MetricValue returns the value of the first sample named name (without
// labels) in a Prometheus text exposition, such as "go_goroutines".
func MetricValue(page []byte, name string) (float64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(page))
	sc.Buffer(make([]byte, 0, 4096), maxMetricsLine)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		rest, ok := strings.CutPrefix(line, name)
		if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '\t') {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return 0, false
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return 0, false
		}
		return v, true
	}
	return 0, false
}

// Growing reports whether a series of samples taken after identical cycles
// grows with every cycle: never smaller than the one before, the last at
// least minTotal above the first, and still growing over the second half.
// Noise goes up and down, and a process warming up (pools, caches) climbs
// and then levels off; a leak of something per cycle only goes up.
func Growing(xs []int, minTotal int) bool {
	if len(xs) < 2 {
		return false
	}
	for i := 1; i < len(xs); i++ {
		if xs[i] < xs[i-1] {
			return false
		}
	}
	last := xs[len(xs)-1]
	return last-xs[0] >= minTotal && last > xs[len(xs)/2]
}
