//go:build nochdb

package storeextension

import (
	"errors"

	"github.com/tracesift/tracesift/internal/store"
)

func openEmbedded(string) (store.Conn, error) {
	return nil, errors.New("this build has no embedded engine (built with -tags nochdb): set `clickhouse::dsn` of the tracesift_store extension")
}
