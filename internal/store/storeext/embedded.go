//go:build !nochdb

package storeext

import (
	"github.com/tracesift/tracesift/internal/store"
	"github.com/tracesift/tracesift/internal/store/chdbconn"
)

// openEmbedded opens chDB. Binaries built with it need libchdb.so at start
// (CHDB_LIB_PATH); build with -tags nochdb for server-only deployments.
func openEmbedded(path string) (store.Conn, error) { return chdbconn.Open(path) }
