package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
)

// The built-in configuration divides TRACESIFT_MEMORY_LIMIT among the parts
// that hold memory.
func TestMemoryBudgetOfTheBuiltinConfig(t *testing.T) {
	for _, tc := range []struct {
		env  string
		want map[string]int64
	}{
		{"1GiB", map[string]int64{
			"receivers::tracesift_otlp::sampler::max_buffered_bytes": 256 << 20,
			"receivers::tracesift_otlp::sampler::go_memory_limit":    (1 << 30) / 5 * 3,
			"receivers::tracesift_otlp::max_bytes_in_flight":         (1 << 30) / 10,
			"receivers::tracesift_loki::max_bytes_in_flight":         (1 << 30) / 10,
			"exporters::tracesift::sending_queue::queue_size":        (1 << 30) / 20,
			"exporters::tracesift/logs::sending_queue::queue_size":   128 << 20,
		}},
	} {
		t.Run(tc.env, func(t *testing.T) {
			t.Setenv(memoryLimitEnv, tc.env)
			r, err := confmap.NewResolver(providerSettings(defaultConfigURI).ResolverSettings)
			require.NoError(t, err)
			conf, err := r.Resolve(context.Background())
			require.NoError(t, err)
			for key, want := range tc.want {
				assert.EqualValues(t, want, conf.Get(key), key)
			}
			assert.NotNil(t, conf.Get("receivers::tracesift_otlp::sampler::max_buffered_bytes"))
		})
	}
}

func TestMemoryBudget(t *testing.T) {
	p := func(env string, cgroup int64) memoryProvider {
		return memoryProvider{getenv: func(string) string { return env },
			cgroup: func() (int64, bool) { return cgroup, cgroup > 0 }}
	}
	get := func(mp memoryProvider, part string) (int64, error) {
		r, err := mp.Retrieve(context.Background(), "memory:"+part, nil)
		if err != nil {
			return 0, err
		}
		v, err := r.AsRaw()
		require.NoError(t, err)
		return v.(int64), nil
	}
	n, err := get(p("", 0), "sampler")
	require.NoError(t, err)
	assert.EqualValues(t, 512<<20, n, "a quarter of the default 2 GiB")
	n, err = get(p("", 1<<30), "sampler")
	require.NoError(t, err)
	assert.EqualValues(t, int64(858993459)/4, n, "a container of 1 GiB: 80 % of it")
	n, err = get(p("", 64<<30), "sampler")
	require.NoError(t, err)
	assert.EqualValues(t, 512<<20, n, "a large container keeps the default")
	n, err = get(p("4G", 0), "requests")
	require.NoError(t, err)
	assert.EqualValues(t, (4<<30)/10, n)
	for _, bad := range []string{"lots", "100MiB", "-1GiB"} {
		_, err = get(p(bad, 0), "go")
		assert.ErrorContains(t, err, memoryLimitEnv, bad)
	}
	_, err = get(p("", 0), "disk")
	assert.ErrorContains(t, err, "unknown part")
}

func TestParseBytes(t *testing.T) {
	for s, want := range map[string]int64{"2GiB": 2 << 30, "1536MiB": 1536 << 20, "2g": 2 << 30, "1.5GB": 3 << 29,
		"536870912": 512 << 20, "512 MiB": 512 << 20, "1T": 1 << 40} {
		n, err := parseBytes(s)
		require.NoError(t, err, s)
		assert.Equal(t, want, n, s)
	}
}
