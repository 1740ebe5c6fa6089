// Package embedded runs the store's SQL on chDB, the ClickHouse engine
// in-process (libchdb.so, loaded when the first connection opens; see
// engine.go).
package embedded

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/tracesift/tracesift/internal/store"
)

// Conn is a store.Conn on a chDB session over one data directory.
type Conn struct {
	session *session
	// insertDir holds each insert's rows for the moment the engine reads
	// them (see Insert).
	insertDir string
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
	s, err := openSession(dataDir)
	if err != nil {
		return nil, err
	}
	removeStaleInsertDirs(os.TempDir())
	insertDir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", insertDirPrefix, os.Getpid()))
	if err != nil {
		s.close()
		return nil, fmt.Errorf("chdb: creating a directory for inserts: %w", err)
	}
	c := &Conn{session: s, insertDir: insertDir}
	// Readers decode 64-bit integers as JSON numbers, as they come from a
	// server through clickhouse-go.
	if err := c.run("SET output_format_json_quote_64bit_integers = 0", nil); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (c *Conn) run(query string, out func([]byte) error) error {
	if err := c.session.query(query, "JSONEachRow", out); err != nil {
		return fmt.Errorf("chdb: %w", err)
	}
	return nil
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

// insertDirPrefix starts the name of each process's directory of insert
// files, followed by its pid.
const insertDirPrefix = "tracesift-inserts-"

// removeStaleInsertDirs removes the insert directories in dir of processes
// that are gone: a process killed during an insert leaves its file behind.
func removeStaleInsertDirs(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), insertDirPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}

// Insert implements store.Conn. The rows go through a file that the engine
// reads (FROM INFILE): it parses rows several times faster from a file than
// inline in the text of a query, which the embedded engine scans as SQL
// first, and binary formats cannot be inline in its C API's NUL-terminated
// query. The file is removed when the insert returns.
func (c *Conn) Insert(ctx context.Context, table string, format store.Format, rows []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f, err := os.CreateTemp(c.insertDir, "rows-")
	if errors.Is(err, fs.ErrNotExist) {
		// Removed under us (a cleaner of $TMPDIR): make it again.
		if err = os.MkdirAll(c.insertDir, 0o700); err == nil {
			f, err = os.CreateTemp(c.insertDir, "rows-")
		}
	}
	if err != nil {
		return fmt.Errorf("chdb: insert into %s: %w", table, err)
	}
	path := f.Name()
	defer os.Remove(path)
	_, err = f.Write(rows)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("chdb: insert into %s: writing its rows: %w", table, err)
	}
	return c.run(store.InsertFromFileStatement(table, path, format, rows), nil)
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
	c.session.close()
	return os.RemoveAll(c.insertDir)
}
