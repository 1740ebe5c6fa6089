package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat: 100
// on every Linux this runs on (it is fixed by the kernel ABI on x86 and arm).
const clockTicks = 100

// ProcCPU returns the user+system CPU time pid has used so far.
func ProcCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("reading CPU time of %d: %w", pid, err)
	}
	// The command name (field 2) is in parentheses and may contain spaces:
	// count fields from the last ')'. Field 3 (state) is rest[0], so utime
	// (field 14) is rest[11] and stime (field 15) is rest[12].
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("reading CPU time of %d: no ')' in /proc/%d/stat", pid, pid)
	}
	rest := strings.Fields(string(b[i+1:]))
	if len(rest) < 13 {
		return 0, fmt.Errorf("reading CPU time of %d: short /proc/%d/stat", pid, pid)
	}
	utime, err1 := strconv.ParseInt(rest[11], 10, 64)
	stime, err2 := strconv.ParseInt(rest[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("reading CPU time of %d: %w", pid, err)
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// MachineBusy returns the CPU time all CPUs of the machine have spent
// running something since boot (/proc/stat: user, nice, system, irq, softirq).
func MachineBusy() (time.Duration, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, fmt.Errorf("reading machine CPU time: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	fields := strings.Fields(line)
	if len(fields) < 6 || fields[0] != "cpu" {
		return 0, fmt.Errorf("reading machine CPU time: unexpected first line %q of /proc/stat", line)
	}
	var busy int64
	for i, f := range fields[1:] {
		// user nice system idle iowait irq softirq steal [guest guest_nice]:
		// steal is the hypervisor's, not this machine's processes'; guest
		// time is already counted in user and nice.
		if i == 3 || i == 4 || i >= 7 {
			continue
		}
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("reading machine CPU time: %w", err)
		}
		busy += v
	}
	return time.Duration(busy) * time.Second / clockTicks, nil
}

// ProcMemory returns the current (VmRSS) and peak (VmHWM) resident set size
// of pid in bytes.
func ProcMemory(pid int) (rss, peak int64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("reading memory of %d: %w", pid, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok || (key != "VmRSS" && key != "VmHWM") {
			continue
		}
		fields := strings.Fields(val) // "123456 kB"
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, 0, fmt.Errorf("reading memory of %d: unexpected %s line %q", pid, key, sc.Text())
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("reading memory of %d: %w", pid, err)
		}
		if key == "VmRSS" {
			rss = kb << 10
		} else {
			peak = kb << 10
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, fmt.Errorf("reading memory of %d: %w", pid, err)
	}
	if rss == 0 || peak == 0 {
		return 0, 0, fmt.Errorf("reading memory of %d: no VmRSS/VmHWM in /proc/%d/status", pid, pid)
	}
	return rss, peak, nil
}

// FreePort asks the kernel for a free localhost TCP port. Another process
// could take it before the server binds it; on a development machine that is
// rare enough, and the server then fails to start with a clear error.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Server is a collector running as a subprocess.
type Server struct {
	Name    string
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
	waitErr error
}

// StartServer runs bin with args, its output going to logPath.
func StartServer(name, bin, logPath string, env []string, args ...string) (*Server, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = env
	// If the benchmark dies, the server must not outlive it and keep the
	// machine busy.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting %s (%s): %w", name, bin, err)
	}
	s := &Server{Name: name, cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	go func() {
		s.waitErr = cmd.Wait()
		logf.Close()
		close(s.exited)
	}()
	return s, nil
}

// PID is the server's process id.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Exited reports whether the process has ended.
func (s *Server) Exited() bool {
	select {
	case <-s.exited:
		return true
	default:
		return false
	}
}

// WaitReady polls ready until it holds, the process exits, or timeout.
func (s *Server) WaitReady(timeout time.Duration, ready func() bool) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !ready() {
		select {
		case <-s.exited:
			return fmt.Errorf("%s exited before it was ready (%v); its log:\n%s", s.Name, s.waitErr, s.LogTail(40))
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %s; its log:\n%s", s.Name, timeout, s.LogTail(40))
		}
	}
	return nil
}

// Stop sends SIGTERM and waits up to grace for a clean exit, then kills.
func (s *Server) Stop(grace time.Duration) error {
	if s.Exited() {
		return fmt.Errorf("%s had already exited: %v", s.Name, s.waitErr)
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("stopping %s: %w", s.Name, err)
	}
	select {
	case <-s.exited:
		if s.waitErr != nil {
			return fmt.Errorf("%s exited with %w after SIGTERM", s.Name, s.waitErr)
		}
		return nil
	case <-time.After(grace):
		_ = s.cmd.Process.Kill()
		<-s.exited
		return fmt.Errorf("%s did not stop within %s of SIGTERM; killed", s.Name, grace)
	}
}

// Kill ends the process at once, for cleanup after a failure.
func (s *Server) Kill() {
	if !s.Exited() {
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// LogTail returns the last n lines of the server's output.
func (s *Server) LogTail(n int) string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// LogProblems returns the lines of the server's output logged at warn level
// or above (the Collector's console encoding: time, TAB, level, TAB, …), at
// most max of them, and how many there were.
func (s *Server) LogProblems(max int) (lines []string, total int) {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return []string{err.Error()}, 1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "\twarn\t") || strings.Contains(l, "\terror\t") ||
			strings.Contains(l, "\tfatal\t") || strings.Contains(l, "panic:") {
			total++
			if len(lines) < max {
				lines = append(lines, truncate(l, 400))
			}
		}
	}
	return lines, total
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// TCPReady reports whether addr accepts connections.
func TCPReady(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// HTTPOK reports whether GET url answers 200.
func HTTPOK(url string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Metrics is a Prometheus text exposition, scraped once.
type Metrics string

// ScrapeMetrics fetches url (a /metrics endpoint).
func ScrapeMetrics(url string) (Metrics, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("scraping %s: %w", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("scraping %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("scraping %s: HTTP %d", url, resp.StatusCode)
	}
	return Metrics(b), nil
}

// Sum adds the samples of the metric called exactly name (a counter's
// "_total" suffix is accepted) whose label set contains every one of labels
// (each written as `key="value"`).
func (m Metrics) Sum(name string, labels ...string) float64 {
	var sum float64
	for _, line := range strings.Split(string(m), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		metric, rest, _ := strings.Cut(line, " ")
		if i := strings.IndexByte(line, '{'); i >= 0 && i < len(metric) {
			metric = line[:i]
			end := strings.LastIndexByte(line, '}')
			if end < 0 {
				continue
			}
			rest = line[end+1:]
			lbls := line[i : end+1]
			ok := true
			for _, l := range labels {
				ok = ok && strings.Contains(lbls, l)
			}
			if !ok {
				continue
			}
		} else if len(labels) > 0 {
			continue
		}
		if metric != name && metric != name+"_total" {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err == nil {
			sum += v
		}
	}
	return sum
}

// WriteFile stores the scrape under dir/name, for a look after the run.
func (m Metrics) WriteFile(dir, name string) error {
	return os.WriteFile(filepath.Join(dir, name), []byte(m), 0o644)
}
