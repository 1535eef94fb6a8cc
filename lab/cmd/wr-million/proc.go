package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// cpuTicks returns utime+stime of process pid (all its threads) in clock
// ticks, from /proc/PID/stat fields 14 and 15, as scripts/lib.sh's
// wr_cpu_ticks reads them.
func cpuTicks(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatTicks(string(b))
}

func parseStatTicks(stat string) (int64, error) {
	// "pid (comm) state ...": comm may hold spaces and parentheses, so
	// split after the last ')'. Field 3 (state) is then f[0], so utime
	// (14) is f[11] and stime (15) is f[12].
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("wr-million: odd /proc stat %q", stat)
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("wr-million: short /proc stat %q", stat)
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("wr-million: odd /proc stat %q", stat)
	}
	return u + s, nil
}

// cpuTimes are one CPU's counters from /proc/stat (clock ticks).
type cpuTimes struct {
	name               string
	busy, softirq, all int64
}

// readCPUTimes returns every CPU's line of /proc/stat. Loopback TCP is
// processed in softirq context, which is charged partly to no process:
// a core can be full while the processes on it add up to less.
func readCPUTimes() ([]cpuTimes, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return nil, err
	}
	var out []cpuTimes
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) < 8 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		// user nice system idle iowait irq softirq [steal ...]
		c := cpuTimes{name: f[0]}
		for i, v := range f[1:] {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("wr-million: odd /proc/stat line %q", line)
			}
			if i >= 8 { // guest times are counted in user already
				break
			}
			c.all += n
			if i != 3 && i != 4 { // idle, iowait
				c.busy += n
			}
			if i == 6 {
				c.softirq = n
			}
		}
		out = append(out, c)
	}
	return out, nil
}
