package scale

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
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

// ParseMachineBusy returns the CPU time all cores of the machine spent
// busy, in seconds, from /proc/stat: its first line's user, nice, system,
// irq, softirq and steal times (everything but idle and iowait; guest time
// is inside user and nice already).
func ParseMachineBusy(stat string) (float64, error) {
	line, _, _ := strings.Cut(stat, "\n")
	fields := strings.Fields(line)
	if len(fields) < 9 || fields[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: first line %q: want cpu and at least 8 times", line)
	}
	var ticks int64
	for _, k := range []int{1, 2, 3, 6, 7, 8} { // user nice system; irq softirq steal
		n, err := strconv.ParseInt(fields[k], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat: CPU time %q: %w", fields[k], err)
		}
		ticks += n
	}
	return float64(ticks) / clockTicks, nil
}

// Machine names the whole machine among a CPUReading's processes.
const Machine = "the machine"

// CPUReading is the CPU time, in seconds, the machine (Machine) and each
// process read spent busy up to At.
type CPUReading struct {
	At  time.Time
	CPU map[string]float64
}

// ReadCPU reads the machine's busy time and that of the processes named in
// pids. A process that has exited is left out.
func ReadCPU(pids map[string]int) (CPUReading, error) {
	r := CPUReading{At: time.Now(), CPU: make(map[string]float64, len(pids)+1)}
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return CPUReading{}, err
	}
	if r.CPU[Machine], err = ParseMachineBusy(string(stat)); err != nil {
		return CPUReading{}, err
	}
	for name, pid := range pids {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		if r.CPU[name], err = ParseStatCPU(string(stat)); err != nil {
			return CPUReading{}, err
		}
	}
	return r, nil
}

func numCPU() int { return runtime.NumCPU() }
