package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

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
