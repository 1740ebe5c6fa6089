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
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/tracesift/tracesift/internal/store"
)

// Conn is a store.Conn on a chDB session over one data directory.
type Conn struct {
	session *session
	// insertDir holds each insert's rows for the moment the engine reads
	// them (see Insert).
	insertDir string
	turns     turns
}

// turns lets one statement at a time into the engine, which runs one at a
// time anyway, and writes before reads: in the engine's own queue an insert
// waited behind every read queued before it (ingestion ran at a fifth of its
// rate while four clients read), here behind the one running at most, which
// max_execution_time bounds. Reads wait only while writes are waiting or
// running, and give up when their context ends.
type turns struct {
	mu      sync.Mutex
	free    chan struct{} // closed and replaced whenever the engine is left
	busy    bool
	writers int // waiting
}

func (t *turns) enter(ctx context.Context, write bool) error {
	t.mu.Lock()
	if write {
		t.writers++
	}
	for t.busy || !write && t.writers > 0 {
		if t.free == nil {
			t.free = make(chan struct{})
		}
		free := t.free
		t.mu.Unlock()
		select {
		case <-free:
		case <-ctx.Done():
			if write {
				t.mu.Lock()
				t.writers--
				t.wake()
				t.mu.Unlock()
			}
			return ctx.Err()
		}
		t.mu.Lock()
	}
	if write {
		t.writers--
	}
	t.busy = true
	t.mu.Unlock()
	return nil
}

func (t *turns) leave() {
	t.mu.Lock()
	t.busy = false
	t.wake()
	t.mu.Unlock()
}

// wake tells every waiter to look again; t.mu is held.
func (t *turns) wake() {
	if t.free != nil {
		close(t.free)
		t.free = nil
	}
}

// do runs f in the engine's turn for a read or a write.
func (c *Conn) do(ctx context.Context, write bool, f func() error) error {
	if err := c.turns.enter(ctx, write); err != nil {
		return err
	}
	defer c.turns.leave()
	return f()
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
	set, err := store.SessionSettings(context.Background(), c)
	if err != nil {
		c.Close()
		return nil, err
	}
	for _, name := range slices.Sorted(maps.Keys(set)) {
		if err := c.run(fmt.Sprintf("SET %s = %s", name, set[name]), nil); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

func (c *Conn) run(query string, out func([]byte) error) error {
	if err := c.session.query(query, "JSONEachRow", out); err != nil {
		// The engine keeps the rows a failed statement had output (a part of
		// a UNION ALL) and hands them out with the next statement's: drain.
		_ = c.session.query("SELECT 1", "JSONEachRow", nil)
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
	return c.do(ctx, true, func() error { return c.run(q, nil) })
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
	return c.do(ctx, true, func() error { return c.run(store.InsertFromFileStatement(table, path, format, rows), nil) })
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
	return c.do(ctx, false, func() error { return c.runRows(q, row) })
}

// runRows runs q and passes each row of its output to row.
func (c *Conn) runRows(q string, row func([]byte) error) error {
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
