//go:build unix

package netclass

import (
	"syscall"
	"testing"
	"time"
)

// reportCPU reports the process's CPU time per op as well as the wall
// clock's: on a machine shared with other work the wall clock measures
// the queue for a core, the CPU time what the code costs. Call it with
// the CPU time taken before the loop (cpuTime) once the loop is done.
func reportCPU(b *testing.B, before time.Duration) {
	b.ReportMetric(float64(cpuTime()-before)/float64(b.N), "cpu-ns/op")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
