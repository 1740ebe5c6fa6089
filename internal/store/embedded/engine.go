package embedded

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// The engine is libchdb.so, loaded with purego when the first session opens
// rather than when the program starts (as chdb-go's binding does, which made
// every binary that links it panic without the library, even for --help).
// The few functions of chdb.h that a session needs are bound here.

// libName is the engine's file, and npmDir where the npm package
// @chdb/lib-linux-x64-gnu puts it in a checkout (make deps).
const (
	libName = "libchdb.so"
	npmDir  = "node_modules/@chdb/lib-linux-x64-gnu"
)

// engine holds the bound functions of libchdb.so.
type engine struct {
	connect       func(argc int, argv []*byte) unsafe.Pointer // chdb_connection *
	closeConn     func(conn unsafe.Pointer)
	query         func(conn unsafe.Pointer, query, format string) unsafe.Pointer // chdb_result *
	resultBuffer  func(res unsafe.Pointer) *byte
	resultLength  func(res unsafe.Pointer) uintptr
	resultError   func(res unsafe.Pointer) string
	destroyResult func(res unsafe.Pointer)
}

var (
	loadOnce  sync.Once
	loaded    *engine
	loadError error
)

// loadEngine finds and loads libchdb.so once per process.
func loadEngine() (*engine, error) {
	loadOnce.Do(func() {
		if p := os.Getenv("CHDB_LIB_PATH"); p != "" {
			loaded, loadError = loadExplicit(p)
			return
		}
		loaded, loadError = load(libraryCandidates())
	})
	return loaded, loadError
}

// libraryCandidates are the places libchdb.so is looked for when
// CHDB_LIB_PATH is not set, in order: beside the binary, in the node_modules
// of a checkout that holds the binary or the working directory,
// /usr/local/lib, and last the bare name, which the dynamic loader looks up
// in LD_LIBRARY_PATH and the system's library paths.
func libraryCandidates() []string {
	var out []string
	var starts []string
	if exe, err := os.Executable(); err == nil {
		if exe, err = filepath.EvalSymlinks(exe); err == nil {
			dir := filepath.Dir(exe)
			out = append(out, filepath.Join(dir, libName), filepath.Join(dir, "..", "lib", libName))
			starts = append(starts, dir)
		}
	}
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	for _, dir := range starts {
		for {
			out = append(out, filepath.Join(dir, npmDir, libName))
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return append(out, "/usr/local/lib/"+libName, libName)
}

// loadExplicit loads the library at path, named by CHDB_LIB_PATH.
func loadExplicit(path string) (*engine, error) {
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return nil, fmt.Errorf("the embedded ClickHouse engine: loading CHDB_LIB_PATH (%s): %w", path, err)
	}
	return bind(h, path)
}

// load opens the first candidate that exists (a bare name is always tried)
// and binds its functions.
func load(candidates []string) (*engine, error) {
	var tried []string
	for _, path := range candidates {
		if strings.Contains(path, "/") {
			if _, err := os.Stat(path); err != nil {
				continue
			}
		}
		h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err != nil {
			tried = append(tried, fmt.Sprintf("%s (%v)", path, err))
			continue
		}
		return bind(h, path)
	}
	return nil, fmt.Errorf("the embedded ClickHouse engine (%s) was not found beside the binary, in %s above it or above "+
		"the working directory, or in the system's library paths: run `make deps` in the tracesift checkout (npm package "+
		"@chdb/lib-linux-x64-gnu), or set CHDB_LIB_PATH to the file; or use a ClickHouse server "+
		"(tracesift_store::clickhouse::dsn). Tried: %s", libName, npmDir, strings.Join(tried, "; "))
}

// bind registers the engine's functions from the library h; a library
// without them is not a chDB this binding knows.
func bind(h uintptr, path string) (e *engine, err error) {
	defer func() {
		// purego panics on a missing symbol.
		if r := recover(); r != nil {
			e, err = nil, fmt.Errorf("the embedded ClickHouse engine %s lacks a function of chdb.h: %v", path, r)
		}
	}()
	e = &engine{}
	purego.RegisterLibFunc(&e.connect, h, "chdb_connect")
	purego.RegisterLibFunc(&e.closeConn, h, "chdb_close_conn")
	purego.RegisterLibFunc(&e.query, h, "chdb_query")
	purego.RegisterLibFunc(&e.resultBuffer, h, "chdb_result_buffer")
	purego.RegisterLibFunc(&e.resultLength, h, "chdb_result_length")
	purego.RegisterLibFunc(&e.resultError, h, "chdb_result_error")
	purego.RegisterLibFunc(&e.destroyResult, h, "chdb_destroy_query_result")
	return e, nil
}

// session is one connection of the engine to a data directory. A process
// may open several, all to the same directory; each runs one statement at a
// time, and the engine runs the sessions' statements in parallel.
type session struct {
	e    *engine
	conn unsafe.Pointer // chdb_connection *
}

// openSession connects the engine to the data directory dir, with the
// configuration file config (writeEngineConfig).
func openSession(dir, config string) (*session, error) {
	e, err := loadEngine()
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	args := []string{"clickhouse", "--path=" + abs, "--config-file=" + config}
	argv := make([]*byte, len(args))
	for i, a := range args {
		b := append([]byte(a), 0)
		argv[i] = &b[0]
	}
	conn := e.connect(len(argv), argv)
	if conn == nil {
		return nil, fmt.Errorf("the embedded ClickHouse engine could not open %s (is another process using it?)", abs)
	}
	return &session{e: e, conn: conn}, nil
}

// engineConfig is the engine's configuration: the compression of parts by
// their size and the cache of skip indexes (engine.xml).
//
//go:embed engine.xml
var engineConfig []byte

// engineConfigName is engineConfig's file in the data directory.
const engineConfigName = "tracesift-engine.xml"

// writeEngineConfig writes engineConfig into the data directory dir (which
// exists) and returns its absolute path.
func writeEngineConfig(dir string) (string, error) {
	path, err := filepath.Abs(filepath.Join(dir, engineConfigName))
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(path, engineConfig, 0o644); err != nil {
		return "", fmt.Errorf("chdb: writing the engine's configuration: %w", err)
	}
	return path, nil
}

// query runs q and passes its output, in format, to out (nil to ignore
// it); the output is only valid during the call.
func (s *session) query(q, format string, out func([]byte) error) error {
	// chdb_connect returns a pointer to the handle that chdb_query takes.
	res := s.e.query(*(*unsafe.Pointer)(s.conn), q, format)
	if res == nil { // nothing to say
		return nil
	}
	defer s.e.destroyResult(res)
	if msg := s.e.resultError(res); msg != "" {
		return errors.New(msg)
	}
	if out == nil {
		return nil
	}
	var buf []byte
	if p, n := s.e.resultBuffer(res), s.e.resultLength(res); p != nil && n > 0 {
		buf = unsafe.Slice(p, n)
	}
	return out(buf)
}

func (s *session) close() {
	if s.conn != nil {
		s.e.closeConn(s.conn)
		s.conn = nil
	}
}
