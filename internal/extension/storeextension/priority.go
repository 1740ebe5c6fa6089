package storeextension

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// capSysNice is CAP_SYS_NICE's bit in a capability set (linux/capability.h).
const capSysNice = 23

// canNiceMerges says whether this process may run the embedded engine's
// merges at a lower CPU priority (os_threads_nice_value_merge_mutate in
// engine.xml): the engine applies it only with CAP_SYS_NICE in its effective
// set and ignores it without.
func canNiceMerges() bool {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return false
	}
	defer f.Close()
	return effectiveCap(bufio.NewScanner(f), capSysNice)
}

// effectiveCap says whether the CapEff line of a /proc/PID/status holds the
// capability bit.
func effectiveCap(lines *bufio.Scanner, bit uint) bool {
	for lines.Scan() {
		hex, ok := strings.CutPrefix(lines.Text(), "CapEff:")
		if !ok {
			continue
		}
		set, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
		return err == nil && set&(1<<bit) != 0
	}
	return false
}
