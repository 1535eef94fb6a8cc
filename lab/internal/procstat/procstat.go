// Package procstat reads what a process has cost the CPU, as
// scripts/lib.sh's wr_cpu_ticks does, for the lab's measurements.
package procstat

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// CPUTicks returns utime+stime of process pid (all its threads) in clock
// ticks, from /proc/PID/stat fields 14 and 15.
func CPUTicks(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return ParseTicks(string(b))
}

// ParseTicks reads utime+stime from one /proc/PID/stat line.
func ParseTicks(stat string) (int64, error) {
	// "pid (comm) state ...": comm may hold spaces and parentheses, so
	// split after the last ')'. Field 3 (state) is then f[0], so utime
	// (14) is f[11] and stime (15) is f[12].
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("procstat: odd /proc stat %q", stat)
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("procstat: short /proc stat %q", stat)
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("procstat: odd /proc stat %q", stat)
	}
	return u + s, nil
}
