package embedded

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The engine is looked for in the checkout's node_modules above the working
// directory (the tests run in this package's folder), among other places,
// and a search that finds nothing says what to do in one message.
func TestEngineIsFoundOrExplained(t *testing.T) {
	wd, err := os.Getwd()
	require.NoError(t, err)
	root := filepath.Join(wd, "..", "..", "..")
	assert.Contains(t, libraryCandidates(), filepath.Join(filepath.Clean(root), npmDir, libName))
	assert.Equal(t, libName, libraryCandidates()[len(libraryCandidates())-1], "the loader's own search last")

	_, err = load([]string{filepath.Join(t.TempDir(), libName), "libchdb-missing-for-a-test.so"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "was not found")
	assert.Contains(t, err.Error(), "make deps")
	assert.Contains(t, err.Error(), "CHDB_LIB_PATH")
	assert.Contains(t, err.Error(), "clickhouse::dsn")
	assert.NotContains(t, err.Error(), "\n", "one line")

	_, err = loadExplicit(filepath.Join(t.TempDir(), libName))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "CHDB_LIB_PATH")

	// A library that is not the engine is refused with a message, not a
	// panic.
	libc := ""
	for _, p := range []string{"/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6", "/lib64/libc.so.6"} {
		if _, err := os.Stat(p); err == nil {
			libc = p
			break
		}
	}
	if libc != "" {
		_, err = load([]string{libc})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "lacks a function of chdb.h")
	}
}
