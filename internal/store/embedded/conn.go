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
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tracesift/tracesift/internal/store"
)

// Conn is a store.Conn on sessions of chDB over one data directory. Each
// session runs one statement at a time; the engine runs the statements of
// different sessions in parallel. Reads and writes have sessions of their
// own, so a read never waits for an insert, and two inserts run at once.
type Conn struct {
	reads, writes sessions
	all           []*session
	closing       sync.Once
	// insertDir holds each insert's rows for the moment the engine reads
	// them (see Insert).
	insertDir string
}

// Sessions a Conn opens for reads and for writes; more statements wait for
// a session. Two of each keep two cores busy without a read or an insert
// waiting for the other kind.
const (
	readSessions  = 2
	writeSessions = 2
)

// sessions are the idle sessions of one kind.
type sessions chan *session

// do runs f on an idle session, waiting for one until ctx ends.
func (p sessions) do(ctx context.Context, f func(*session) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case s := <-p:
		defer func() { p <- s }()
		return f(s)
	case <-ctx.Done():
		return ctx.Err()
	}
}

var _ store.Conn = (*Conn)(nil)

// Open starts the embedded engine on dataDir, creating it if needed. chDB
// opens one data directory per process and one process per data directory.
func Open(dataDir string) (*Conn, error) {
	if dataDir == "" {
		return nil, errors.New("chdb: data directory is empty")
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, fmt.Errorf("chdb: creating data directory: %w", err)
	}
	config, err := writeEngineConfig(dataDir)
	if err != nil {
		return nil, err
	}
	s, err := openSession(dataDir, config)
	if err != nil {
		return nil, err
	}
	removeStaleInsertDirs(os.TempDir())
	insertDir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", insertDirPrefix, os.Getpid()))
	if err != nil {
		s.close()
		return nil, fmt.Errorf("chdb: creating a directory for inserts: %w", err)
	}
	c := &Conn{reads: make(sessions, readSessions), writes: make(sessions, writeSessions), insertDir: insertDir}
	c.all = append(c.all, s)
	for len(c.all) < readSessions+writeSessions {
		more, err := openSession(dataDir, config)
		if err != nil {
			c.closeNow()
			return nil, err
		}
		c.all = append(c.all, more)
	}
	for i, s := range c.all {
		if i < readSessions {
			c.reads <- s
		} else {
			c.writes <- s
		}
	}
	set, err := store.SessionSettings(context.Background(), c)
	if err != nil {
		c.closeNow()
		return nil, err
	}
	// Readers decode 64-bit integers as JSON numbers, as they come from a
	// server through clickhouse-go.
	settings := []string{"SET output_format_json_quote_64bit_integers = 0"}
	for _, name := range slices.Sorted(maps.Keys(set)) {
		settings = append(settings, fmt.Sprintf("SET %s = %s", name, set[name]))
	}
	for _, s := range c.all {
		for _, q := range settings {
			if err := s.run(q, nil); err != nil {
				c.closeNow()
				return nil, err
			}
		}
	}
	return c, nil
}

func (s *session) run(query string, out func([]byte) error) error {
	if err := s.query(query, "JSONEachRow", out); err != nil {
		// The engine keeps the rows a failed statement had output (a part of
		// a UNION ALL) and hands them out with the next statement's: drain.
		_ = s.query("SELECT 1", "JSONEachRow", nil)
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
	return c.writes.do(ctx, func(s *session) error { return s.run(q, nil) })
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
	return c.writes.do(ctx, func(s *session) error {
		return s.run(store.InsertFromFileStatement(table, path, format, rows), nil)
	})
}

// Query implements store.Conn.
func (c *Conn) Query(ctx context.Context, query string, params store.Params, row func([]byte) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return c.reads.do(ctx, func(s *session) error {
		// Bounded once it has a session, before the parameters' values are
		// in it.
		bounded, err := withinDeadline(ctx, query)
		if err != nil {
			return err
		}
		q, err := store.RenderParams(bounded, params)
		if err != nil {
			return err
		}
		return s.runRows(q, row)
	})
}

// maxTimeRe finds a statement's bound on its run time in its SETTINGS
// clause, on its last line (a read's limits, store.ReaderConfig), in seconds.
var maxTimeRe = regexp.MustCompile(`\nSETTINGS [^\n]*\bmax_execution_time = ([0-9]+(?:\.[0-9]+)?)[^\n]*\s*$`)

// withinDeadline is q with its run time bound cut to what is left until
// ctx's deadline. The engine does not stop a statement when its context
// ends, as a server does, and a read may have waited for its session: the
// request's time bounds the read however long the wait was.
func withinDeadline(ctx context.Context, q string) (string, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return q, nil
	}
	// In milliseconds: a bound of 0 would be none.
	left := time.Until(deadline)
	if left < time.Millisecond {
		return "", context.DeadlineExceeded
	}
	m := maxTimeRe.FindStringSubmatchIndex(q)
	if m == nil {
		return q, nil
	}
	bound, err := strconv.ParseFloat(q[m[2]:m[3]], 64)
	if err != nil || bound <= left.Seconds() {
		return q, nil
	}
	return q[:m[2]] + strconv.FormatFloat(left.Seconds(), 'f', 3, 64) + q[m[3]:], nil
}

// runRows runs q and passes each row of its output to row.
func (s *session) runRows(q string, row func([]byte) error) error {
	return s.run(q, func(buf []byte) error {
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

// Close ends the sessions once the statements running on them have ended;
// the data stays in its directory. A statement after it waits until its
// context ends.
func (c *Conn) Close() error {
	var err error
	c.closing.Do(func() {
		for range cap(c.reads) {
			<-c.reads
		}
		for range cap(c.writes) {
			<-c.writes
		}
		err = c.closeNow()
	})
	return err
}

// closeNow ends the sessions, running or not, and removes the directory of
// inserts.
func (c *Conn) closeNow() error {
	for _, s := range c.all {
		s.close()
	}
	return os.RemoveAll(c.insertDir)
}
