// Package store owns tracesift's ClickHouse schema, its writers and readers.
//
// One SQL dialect serves two connections: the embedded ClickHouse engine
// (chDB, package chdbconn) and a ClickHouse server (clickhouse-go, package
// chconn). Everything above the Conn interface is shared, so the SQL that the
// tests run on chDB is the SQL that production runs on a server.
package store

import (
	"context"
	"errors"
	"regexp"
	"strings"
)

// ErrNotFound is returned by readers when the requested trace is not stored.
var ErrNotFound = errors.New("not found")

// Params are the values of a query's `{name:Type}` placeholders. Values are
// string, int64 or uint64. They never reach SQL text on a server (bound by
// the server); on chDB they are rendered as escaped literals.
type Params map[string]any

// Conn is what the store needs from a ClickHouse connection.
type Conn interface {
	// Exec runs a statement that returns no rows (DDL).
	Exec(ctx context.Context, query string, params Params) error
	// Insert appends rows, given as JSONEachRow (one JSON object a line), to
	// table (qualified with its database). It must not keep jsonEachRow after
	// it returns: the writer reuses the buffer for its next batch.
	Insert(ctx context.Context, table string, jsonEachRow []byte) error
	// Query runs a SELECT and calls row once per result row with the row as a
	// JSON object keyed by column name. 64-bit integers are JSON numbers.
	Query(ctx context.Context, query string, params Params, row func([]byte) error) error
	// Close releases the connection.
	Close() error
}

var identRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ValidDatabaseName reports whether name can be used unquoted as a database.
func ValidDatabaseName(name string) bool { return identRe.MatchString(name) }

// InsertStatement is an INSERT of JSONEachRow rows carried inline after the
// FORMAT clause, which ClickHouse streams without parsing them as SQL. It
// copies the rows once.
func InsertStatement(table string, jsonEachRow []byte) string {
	const format = " FORMAT JSONEachRow\n"
	var b strings.Builder
	b.Grow(len("INSERT INTO ") + len(table) + len(format) + len(jsonEachRow))
	b.WriteString("INSERT INTO ")
	b.WriteString(table)
	b.WriteString(format)
	b.Write(jsonEachRow)
	return b.String()
}
