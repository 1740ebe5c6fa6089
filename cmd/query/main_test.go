package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func noEnv(string) string { return "" }

// The query service explains what is missing or wrong in its flags and
// environment before it connects, and names the server it could not reach.
func TestFlagsAndStartupErrors(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{nil, nil, "-dsn (or TRACESIFT_CLICKHOUSE_DSN) is required"},
		{[]string{"-dsn", "clickhouse://127.0.0.1:9000", "-database", "ts; DROP"}, nil, `-database "ts; DROP" must be a plain identifier`},
		{nil, map[string]string{"TRACESIFT_CLICKHOUSE_DSN": "clickhouse://127.0.0.1:9000", "TRACESIFT_DATABASE": "a-b"}, `-database "a-b"`},
		{[]string{"-dsn", "clickhouse://127.0.0.1:9000", "-log-window", "0s"}, nil, "-log-window must be positive"},
		{[]string{"-dsn", "clickhouse://127.0.0.1:9000", "extra"}, nil, `unexpected arguments ["extra"]`},
		{[]string{"-no-such-flag"}, nil, "flag provided but not defined: -no-such-flag"},
		{[]string{"-dsn", "clickhouse://%zz"}, nil, "clickhouse: parsing dsn"},
	} {
		getenv := func(k string) string { return tc.env[k] }
		err := run(ctx, tc.args, getenv)
		require.Error(t, err, "%v %v", tc.args, tc.env)
		assert.Contains(t, err.Error(), tc.want, "%v %v", tc.args, tc.env)
	}
	assert.ErrorIs(t, run(ctx, []string{"-help"}, noEnv), flag.ErrHelp)

	// A server that is not there: the error names it, within the dial
	// timeout.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	err = run(ctx, []string{"-dsn", fmt.Sprintf("clickhouse://%s?dial_timeout=2s", addr)}, noEnv)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "clickhouse: ping")
	assert.Contains(t, err.Error(), addr)
}
