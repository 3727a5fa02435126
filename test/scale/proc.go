package scale

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// clockTicks is the unit of /proc/<pid>/stat's CPU times: USER_HZ, 100 on
// every Linux architecture Go supports.
const clockTicks = 100

// ProcSample is one reading of a process's /proc files.
type ProcSample struct {
	// RSS is the resident set size in bytes (VmRSS).
	RSS int64
	// CPU is the user and system CPU time the process used, in seconds.
	CPU float64
}

// ReadProc reads pid's resident memory and CPU time.
func ReadProc(pid int) (ProcSample, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return ProcSample{}, err
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ProcSample{}, err
	}
	var s ProcSample
	if s.RSS, err = ParseVmRSS(string(status)); err != nil {
		return ProcSample{}, err
	}
	if s.CPU, err = ParseStatCPU(string(stat)); err != nil {
		return ProcSample{}, err
	}
	return s, nil
}

// ParseVmRSS returns the VmRSS line of a /proc/<pid>/status file in bytes.
func ParseVmRSS(status string) (int64, error) {
	for _, line := range strings.Split(status, "\n") {
		rest, ok := strings.CutPrefix(line, "VmRSS:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("/proc status: VmRSS %q: want <n> kB", strings.TrimSpace(rest))
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc status: VmRSS %q: %w", fields[0], err)
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("/proc status: no VmRSS line")
}

// ParseStatCPU returns utime + stime of a /proc/<pid>/stat line in seconds.
// The command name, field 2, is in parentheses and may hold spaces and
// parentheses itself: the fields are counted after its last ')'.
func ParseStatCPU(stat string) (float64, error) {
	end := strings.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, fmt.Errorf("/proc stat: no command name in %q", stat)
	}
	// After the name: field 3 (state) first; utime and stime are 14 and 15.
	fields := strings.Fields(stat[end+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc stat: %d fields after the command name, want at least 13", len(fields))
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc stat: CPU time %q: %w", f, err)
		}
		ticks += n
	}
	return float64(ticks) / clockTicks, nil
}

func numCPU() int { return runtime.NumCPU() }
