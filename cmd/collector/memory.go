package main

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/confmap"
)

// The memory budget: one number, TRACESIFT_MEMORY_LIMIT, that the built-in
// configuration divides among the parts that hold memory, through
// ${memory:PART} (memoryProvider). What is left (a tenth or so) is the
// embedded engine's and the process's own.
const (
	memoryLimitEnv     = "TRACESIFT_MEMORY_LIMIT"
	defaultMemoryLimit = 2 << 30
	minMemoryLimit     = 512 << 20
	// cgroupShare of a container's memory limit is the default budget when
	// that is lower than defaultMemoryLimit: the rest is the engine's.
	cgroupShare = 0.8
)

// memoryShares are the parts of the budget, in the units each key takes.
// The exporter queues count protobuf bytes, which take ~1.7 (logs) to ~2.5
// (spans) times as much decoded: their shares are that much smaller.
var memoryShares = map[string]struct {
	num, den int64
	what     string
}{
	"sampler":      {1, 4, "the sampler's buffer (max_buffered_bytes, outside the Go heap)"},
	"go":           {3, 5, "the Go runtime's soft limit (go_memory_limit): request bodies, exporter queues, decoding"},
	"requests":     {1, 10, "request bytes in flight of one receiver (max_bytes_in_flight)"},
	"logs_queue":   {1, 8, "the logs exporter's queue (sending_queue::queue_size, bytes)"},
	"traces_queue": {1, 20, "the traces exporter's queue (sending_queue::queue_size, bytes)"},
}

// memoryProvider answers ${memory:PART} with PART's share of the budget,
// in bytes.
type memoryProvider struct {
	getenv func(string) string
	cgroup func() (int64, bool)
}

func newMemoryProvider() memoryProvider {
	return memoryProvider{getenv: os.Getenv, cgroup: cgroupMemoryLimit}
}

func (p memoryProvider) Retrieve(_ context.Context, uri string, _ confmap.WatcherFunc) (*confmap.Retrieved, error) {
	part := strings.TrimPrefix(uri, "memory:")
	share, ok := memoryShares[part]
	if !ok {
		return nil, fmt.Errorf("unknown part of the memory budget %q (known: sampler, go, requests, logs_queue, traces_queue)", part)
	}
	budget, err := p.budget()
	if err != nil {
		return nil, err
	}
	return confmap.NewRetrieved(budget / share.den * share.num)
}

// budget is TRACESIFT_MEMORY_LIMIT, else the default (capped by the
// container's limit).
func (p memoryProvider) budget() (int64, error) {
	if v := strings.TrimSpace(p.getenv(memoryLimitEnv)); v != "" {
		n, err := parseBytes(v)
		if err != nil {
			return 0, fmt.Errorf("%s=%q: %w", memoryLimitEnv, v, err)
		}
		if n < minMemoryLimit {
			return 0, fmt.Errorf("%s=%q: the budget must be at least 512MiB", memoryLimitEnv, v)
		}
		return n, nil
	}
	if limit, ok := p.cgroup(); ok {
		return max(min(defaultMemoryLimit, int64(float64(limit)*cgroupShare)), minMemoryLimit), nil
	}
	return defaultMemoryLimit, nil
}

func (memoryProvider) Scheme() string                 { return "memory" }
func (memoryProvider) Shutdown(context.Context) error { return nil }

var bytesRe = regexp.MustCompile(`^(\d+(?:\.\d+)?)\s*([KMGT]I?B?|B)?$`)

// parseBytes reads "2GiB", "1536MiB", "2G", "1.5GB" or a number of bytes;
// the units are powers of 1024 either way, as memory limits are meant.
func parseBytes(s string) (int64, error) {
	m := bytesRe.FindStringSubmatch(strings.ToUpper(s))
	if m == nil {
		return 0, fmt.Errorf("not a size: write it as 2GiB, 1536MiB or a number of bytes")
	}
	f, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, err
	}
	unit := map[byte]float64{'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30, 'T': 1 << 40}
	if m[2] != "" && m[2] != "B" {
		f *= unit[m[2][0]]
	}
	return int64(f), nil
}

// cgroupMemoryLimit is the container's memory limit (cgroup v2), if any.
func cgroupMemoryLimit() (int64, bool) {
	b, err := os.ReadFile("/sys/fs/cgroup/memory.max")
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n, err == nil && n > 0
}
