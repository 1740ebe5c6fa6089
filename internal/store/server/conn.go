// Package server runs the store's SQL on a ClickHouse server through
// clickhouse-go. It stays thin: everything else is shared with chDB.
package server

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/tracesift/tracesift/internal/store"
)

// Conn is a store.Conn on a ClickHouse server.
type Conn struct {
	conn driver.Conn
	// settings go with every statement (store.SessionSettings).
	settings clickhouse.Settings
}

var _ store.Conn = (*Conn)(nil)

// Open connects to the server named by dsn, e.g.
// clickhouse://user:password@host:9000/default?dial_timeout=5s.
func Open(ctx context.Context, dsn string) (*Conn, error) {
	opts, err := clickhouse.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("clickhouse: parsing dsn: %w", err)
	}
	conn, err := clickhouse.Open(opts)
	if err != nil {
		return nil, fmt.Errorf("clickhouse: opening %v: %w", opts.Addr, err)
	}
	if err := conn.Ping(ctx); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("clickhouse: ping %v: %w", opts.Addr, err)
	}
	c := &Conn{conn: conn}
	set, err := store.SessionSettings(ctx, c)
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("clickhouse: %v: %w", opts.Addr, err)
	}
	if len(set) > 0 {
		c.settings = clickhouse.Settings{}
		for k, v := range set {
			c.settings[k] = v
		}
	}
	return c, nil
}

// withParams is ctx carrying the statement's parameters and the settings.
func (c *Conn) withParams(ctx context.Context, params store.Params) context.Context {
	var opts []clickhouse.QueryOption
	if len(params) > 0 {
		opts = append(opts, clickhouse.WithParameters(store.ServerParams(params)))
	}
	if c.settings != nil {
		opts = append(opts, clickhouse.WithSettings(c.settings))
	}
	if len(opts) == 0 {
		return ctx
	}
	return clickhouse.Context(ctx, opts...)
}

// Exec implements store.Conn.
func (c *Conn) Exec(ctx context.Context, query string, params store.Params) error {
	return c.conn.Exec(c.withParams(ctx, params), query)
}

// Insert implements store.Conn. The server reads inline rows after FORMAT
// with its streaming parser, so max_query_size does not bound the batch.
func (c *Conn) Insert(ctx context.Context, table string, format store.Format, rows []byte) error {
	return c.conn.Exec(c.withParams(ctx, nil), store.InsertStatement(table, format, rows))
}

// Query implements store.Conn. Rows are scanned into the column types the
// driver reports and re-encoded as JSON objects, the shape chDB returns.
func (c *Conn) Query(ctx context.Context, query string, params store.Params, row func([]byte) error) error {
	rows, err := c.conn.Query(c.withParams(ctx, params), query)
	if err != nil {
		return err
	}
	defer rows.Close()
	cols := rows.ColumnTypes()
	names, types := make([]string, len(cols)), make([]reflect.Type, len(cols))
	for i, ct := range cols {
		names[i], types[i] = ct.Name(), ct.ScanType()
	}
	for rows.Next() {
		dest := scanDest(types)
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		b, err := rowJSON(names, dest)
		if err != nil {
			return err
		}
		if err := row(b); err != nil {
			return err
		}
	}
	return rows.Err()
}

// scanDest is a fresh destination for each column of a row, of the types
// the driver scans them into.
func scanDest(types []reflect.Type) []any {
	dest := make([]any, len(types))
	for i, t := range types {
		dest[i] = reflect.New(t).Interface()
	}
	return dest
}

// rowJSON encodes a scanned row as the JSON object chDB returns for it:
// keyed by column name, 64-bit integers as numbers, maps as objects.
func rowJSON(names []string, dest []any) ([]byte, error) {
	obj := make(map[string]any, len(names))
	for i, name := range names {
		obj[name] = reflect.ValueOf(dest[i]).Elem().Interface()
	}
	return json.Marshal(obj)
}

// Close implements store.Conn.
func (c *Conn) Close() error { return c.conn.Close() }
