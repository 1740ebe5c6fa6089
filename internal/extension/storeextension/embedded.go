//go:build !nochdb

package storeextension

import (
	"github.com/tracesift/tracesift/internal/store"
	"github.com/tracesift/tracesift/internal/store/embedded"
)

// openEmbedded opens chDB, loading libchdb.so (found as embedded.Open says)
// at the first call; build with -tags nochdb to leave the engine out.
func openEmbedded(path string) (store.Conn, error) { return embedded.Open(path) }
