package storeextension

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/tracesift/tracesift/internal/store"
)

// ErrNotConnected is the error of every store call made while the
// extension has not connected to its ClickHouse server yet (or has shut
// down). It is worth retrying: the extension keeps trying to connect.
var ErrNotConnected = fmt.Errorf("%w: ClickHouse is not reachable yet (tracesift_store keeps trying to connect; see its log)",
	store.ErrUnavailable)

// pendingConn is the store.Conn the writer and reader of a server store
// hold from Start on: it fails every call with ErrNotConnected until the
// connecting loop hands it the server's connection, then passes every call
// on to it. The error carries no ClickHouse code, so that store.IsPermanent
// and store.IsQueryLimit never take it for the store's answer.
type pendingConn struct {
	conn atomic.Pointer[store.Conn]
}

var _ store.Conn = (*pendingConn)(nil)

func (p *pendingConn) connect(c store.Conn) { p.conn.Store(&c) }

func (p *pendingConn) get() (store.Conn, error) {
	if c := p.conn.Load(); c != nil {
		return *c, nil
	}
	return nil, ErrNotConnected
}

func (p *pendingConn) Exec(ctx context.Context, query string, params store.Params) error {
	c, err := p.get()
	if err != nil {
		return err
	}
	return c.Exec(ctx, query, params)
}

func (p *pendingConn) Insert(ctx context.Context, table string, format store.Format, rows []byte) error {
	c, err := p.get()
	if err != nil {
		return err
	}
	return c.Insert(ctx, table, format, rows)
}

func (p *pendingConn) Query(ctx context.Context, query string, params store.Params, row func([]byte) error) error {
	c, err := p.get()
	if err != nil {
		return err
	}
	return c.Query(ctx, query, params, row)
}

// Close closes the server's connection, if connected; later calls fail
// with ErrNotConnected.
func (p *pendingConn) Close() error {
	if c := p.conn.Swap(nil); c != nil {
		return (*c).Close()
	}
	return nil
}
