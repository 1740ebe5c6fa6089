// Package chdbconn runs the store's SQL on chDB, the ClickHouse engine
// in-process. It is the only package that loads libchdb.so (the chdb-go
// binding loads it when the package is initialised), so binaries that only
// talk to a ClickHouse server do not import it.
package chdbconn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/chdb-io/chdb-go/chdb"

	"github.com/tracesift/tracesift/internal/store"
)

// Conn is a store.Conn on a chDB session over one data directory.
type Conn struct {
	session *chdb.Session
}

var _ store.Conn = (*Conn)(nil)

// Open starts the embedded engine on dataDir, creating it if needed. chDB
// allows one session per process and one process per data directory.
func Open(dataDir string) (*Conn, error) {
	if dataDir == "" {
		return nil, errors.New("chdb: data directory is empty")
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, fmt.Errorf("chdb: creating data directory: %w", err)
	}
	s, err := chdb.NewSession(dataDir)
	if err != nil {
		return nil, fmt.Errorf("chdb: opening session on %s: %w", dataDir, err)
	}
	c := &Conn{session: s}
	// Readers decode 64-bit integers as JSON numbers, as they come from a
	// server through clickhouse-go.
	if err := c.run("SET output_format_json_quote_64bit_integers = 0", nil); err != nil {
		s.Close()
		return nil, err
	}
	return c, nil
}

func (c *Conn) run(query string, out func([]byte) error) error {
	res, err := c.session.Query(query, "JSONEachRow")
	if err != nil {
		return fmt.Errorf("chdb: %w", err)
	}
	if res == nil {
		return nil
	}
	defer res.Free()
	if out == nil {
		return nil
	}
	return out(res.Buf())
}

// Exec implements store.Conn.
func (c *Conn) Exec(ctx context.Context, query string, params store.Params) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	q, err := store.RenderParams(query, params)
	if err != nil {
		return err
	}
	return c.run(q, nil)
}

// Insert implements store.Conn.
func (c *Conn) Insert(ctx context.Context, table string, jsonEachRow []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if bytes.IndexByte(jsonEachRow, 0) >= 0 {
		// The C API takes a NUL-terminated query; JSON encoding escapes NUL,
		// so a raw one means a caller bug, not user data.
		return errors.New("chdb: insert data contains a NUL byte")
	}
	return c.run(store.InsertStatement(table, jsonEachRow), nil)
}

// Query implements store.Conn.
func (c *Conn) Query(ctx context.Context, query string, params store.Params, row func([]byte) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	q, err := store.RenderParams(query, params)
	if err != nil {
		return err
	}
	return c.run(q, func(buf []byte) error {
		for len(buf) > 0 {
			line := buf
			if i := bytes.IndexByte(buf, '\n'); i >= 0 {
				line, buf = buf[:i], buf[i+1:]
			} else {
				buf = nil
			}
			if len(line) == 0 {
				continue
			}
			if err := row(line); err != nil {
				return err
			}
		}
		return nil
	})
}

// Close ends the session; the data stays in its directory.
func (c *Conn) Close() error {
	c.session.Close()
	return nil
}
