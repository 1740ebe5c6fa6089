package server

import (
	"context"
	"encoding/json"
	"net"
	"reflect"
	"testing"

	"github.com/ClickHouse/clickhouse-go/v2/lib/column"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tracesift/tracesift/internal/store"
)

// Rows come from the server as the driver scans each ClickHouse type; they
// must reach the reader as the JSON the embedded engine gives: 64-bit
// integers as exact numbers, maps as objects, arrays as arrays.
func TestRowsAreTheEmbeddedEnginesJSON(t *testing.T) {
	cols := []struct {
		name, chType string
		value        any
		want         string
	}{
		{"timestamp", "Int64", int64(1796010663450975897), `1796010663450975897`},
		{"duration_ns", "UInt64", uint64(18446744073709551615), `18446744073709551615`},
		{"severity_number", "UInt8", uint8(17), `17`},
		{"span_count", "UInt32", uint32(4000000000), `4000000000`},
		{"value", "Float64", 812.5, `812.5`},
		{"service", "LowCardinality(String)", "checkout", `"checkout"`},
		{"body", "String", "naïve \"quoted\"\n", `"naïve \"quoted\"\n"`},
		{"attributes", "Map(String, String)", map[string]string{"http.route": "/cart"}, `{"http.route":"/cart"}`},
		{"span_ids", "Array(String)", []string{"00f067aa0ba902b7"}, `["00f067aa0ba902b7"]`},
	}
	names := make([]string, len(cols))
	types := make([]reflect.Type, len(cols))
	for i, c := range cols {
		col, err := column.Type(c.chType).Column(c.name, &column.ServerContext{})
		require.NoError(t, err, c.chType)
		names[i], types[i] = c.name, col.ScanType()
	}
	dest := scanDest(types)
	for i, c := range cols {
		// What rows.Scan does: the driver's value into the destination.
		reflect.ValueOf(dest[i]).Elem().Set(reflect.ValueOf(c.value).Convert(types[i]))
	}
	b, err := rowJSON(names, dest)
	require.NoError(t, err)
	var got map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(b, &got))
	for _, c := range cols {
		assert.JSONEq(t, c.want, string(got[c.name]), c.name)
	}
}

// Query parameters are bound by the server as text, never rendered into the
// statement.
func TestParamsAreBoundAsText(t *testing.T) {
	assert.Equal(t, map[string]string{"a": "x' OR 1=1 --", "n": "-5", "u": "18446744073709551615"},
		store.ServerParams(store.Params{"a": "x' OR 1=1 --", "n": int64(-5), "u": uint64(18446744073709551615)}))
}

// A DSN that does not parse, and a server that is not there, are errors that
// name what is wrong.
func TestOpenErrors(t *testing.T) {
	_, err := Open(context.Background(), "clickhouse://%zz")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "clickhouse: parsing dsn")

	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	_, err = Open(context.Background(), "clickhouse://"+addr+"?dial_timeout=2s")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "clickhouse: ping")
	assert.Contains(t, err.Error(), addr)
}
