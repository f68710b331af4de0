package bench

import (
	"bufio"
	"bytes"
	"os"
	"runtime/debug"
	"strconv"
	"syscall"
	"time"
)

// resetPeakRSS returns freed memory to the operating system and resets the
// kernel's peak-RSS mark of this process (Linux >= 4.0, "5" in
// /proc/self/clear_refs) to the current RSS, so that the next peakRSS reads
// the peak of one scenario. It reports whether the reset worked.
func resetPeakRSS() bool {
	debug.FreeOSMemory() // so that the mark starts near the live heap
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// peakRSS returns the peak resident set size of the process in bytes:
// VmHWM from /proc/self/status, else getrusage's maxrss.
func peakRSS() int64 {
	if v, ok := procStatus("VmHWM:"); ok {
		return v
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss * 1024
}

// currentRSS returns the resident set size now (VmRSS), or 0.
func currentRSS() int64 {
	v, _ := procStatus("VmRSS:")
	return v
}

// procStatus reads one "kB" field of /proc/self/status in bytes.
func procStatus(key string) (int64, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, []byte(key)) {
			continue
		}
		f := bytes.Fields(line[len(key):])
		if len(f) == 0 {
			return 0, false
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil {
			return 0, false
		}
		return kb * 1024, true
	}
	return 0, false
}

// loadAvg returns the first three fields of /proc/loadavg, or "?".
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := bytes.Fields(b)
	if len(f) < 3 {
		return "?"
	}
	return string(bytes.Join(f[:3], []byte(" ")))
}

// cpuTime returns the CPU time (user and system) the process has used;
// zero where getrusage fails.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// prefault touches n bytes of fresh anonymous memory and unmaps them, so
// that the next n bytes the kernel hands out (the page cache of the files
// written next) are pages the machine has touched recently. On a virtual
// machine whose freed memory goes back to the hypervisor (free page
// reporting), the first write into such a page costs a fault: about 0.5 s
// per 256 MiB on the machines of BENCHMARKS.md, against 0.04 s for a page
// freed a moment ago. The disk baseline rewrites one file and reuses its
// pages; the files scenario keeps every file it stores until the end. It
// is capped at half of MemAvailable and returns the time it took.
func prefault(n int64) (int64, time.Duration) {
	if avail, ok := procMeminfo("MemAvailable:"); ok {
		n = min(n, avail/2)
	}
	if n <= 0 {
		return 0, 0
	}
	start := time.Now()
	m, err := syscall.Mmap(-1, 0, int(n), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return 0, 0
	}
	for i := 0; i < len(m); i += 4096 {
		m[i] = 1
	}
	_ = syscall.Munmap(m)
	return n, time.Since(start)
}

// procMeminfo returns a "kB" value of /proc/meminfo in bytes.
func procMeminfo(key string) (int64, bool) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte(key)); ok {
			f := bytes.Fields(rest)
			if len(f) == 0 {
				return 0, false
			}
			v, err := strconv.ParseInt(string(f[0]), 10, 64)
			return v << 10, err == nil
		}
	}
	return 0, false
}
