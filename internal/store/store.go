// Package store owns tracesift's ClickHouse schema, its writers and readers.
//
// One SQL dialect serves two connections: the embedded ClickHouse engine
// (chDB, package store/embedded) and a ClickHouse server (clickhouse-go, package
// store/server). Everything above the Conn interface is shared, so the SQL that the
// tests run on chDB is the SQL that production runs on a server.
package store

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/cespare/xxhash/v2"
)

// ErrNotFound is returned by readers when the requested trace is not stored.
var ErrNotFound = errors.New("not found")

// ErrUnavailable is wrapped by a backend's errors that say the store cannot
// be reached now (not connected yet): worth retrying, and the query API
// answers it 503 with Retry-After.
var ErrUnavailable = errors.New("the store is not reachable")

// Params are the values of a query's `{name:Type}` placeholders. Values are
// string, int64 or uint64. They never reach SQL text on a server (bound by
// the server); on chDB they are rendered as escaped literals.
type Params map[string]any

// Conn is what the store needs from a ClickHouse connection.
type Conn interface {
	// Exec runs a statement that returns no rows (DDL).
	Exec(ctx context.Context, query string, params Params) error
	// Insert appends rows, encoded in format, to table (qualified with its
	// database). It must not keep rows after it returns: the writer reuses
	// the buffer for its next batch.
	Insert(ctx context.Context, table string, format Format, rows []byte) error
	// Query runs a SELECT and calls row once per result row with the row as a
	// JSON object keyed by column name. 64-bit integers are JSON numbers.
	Query(ctx context.Context, query string, params Params, row func([]byte) error) error
	// Close releases the connection.
	Close() error
}

var identRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ValidDatabaseName reports whether name can be used unquoted as a database.
func ValidDatabaseName(name string) bool { return identRe.MatchString(name) }

// Format is the ClickHouse input format of an insert's rows.
type Format string

const (
	// FormatNative is a block of ClickHouse's Native format (native.go):
	// every write of the writer.
	FormatNative Format = "Native"
	// FormatJSONEachRow is one JSON object a line (the tests write rows as
	// earlier versions did with it).
	FormatJSONEachRow Format = "JSONEachRow"
)

// InsertStatement is an INSERT with its rows carried inline after the
// FORMAT clause and a line feed, which ClickHouse reads as data without
// parsing it as SQL, binary or not. It copies the rows once.
//
// Inserts are idempotent: the deduplication token is a hash of the rows, so a
// batch sent again after a failure whose outcome was unknown (a timeout after
// the server had written it) is dropped by the table, whose schema keeps the
// tokens of its last inserts (non_replicated_deduplication_window, schema
// 004), and by any materialized view fed from it (there is none since schema
// 008).
func InsertStatement(table string, format Format, rows []byte) string {
	head := "INSERT INTO " + table + insertTail(format, rows)
	var b strings.Builder
	b.Grow(len(head) + len(rows))
	b.WriteString(head)
	b.Write(rows)
	return b.String()
}

// InsertFromFileStatement is the INSERT of InsertStatement with its rows read
// from the file at path instead (FROM INFILE, a feature of the embedded
// engine and of clickhouse-client), which the engine reads several times
// faster than rows inline in the query text.
func InsertFromFileStatement(table, path string, format Format, rows []byte) string {
	return "INSERT INTO " + table + " FROM INFILE " + quoteString(path) + insertTail(format, rows)
}

// insertTail is the SETTINGS and FORMAT clauses of an insert of rows, and
// the line feed after which inline rows start.
func insertTail(format Format, rows []byte) string {
	return " SETTINGS deduplicate_blocks_in_dependent_materialized_views = 1, insert_deduplication_token = '" +
		insertToken(rows) + "' FORMAT " + string(format) + "\n"
}

// insertToken is the deduplication token of a batch of rows, in hex: a
// 64-bit hash of it and its length. Two batches with the same token are the
// same rows (tables compare it with their last 1000 tokens only).
func insertToken(rows []byte) string {
	var t [12]byte
	binary.BigEndian.PutUint64(t[:8], xxhash.Sum64(rows))
	binary.BigEndian.PutUint32(t[8:], uint32(len(rows)))
	return hex.EncodeToString(t[:])
}

// codeRe finds the ClickHouse error code in an error's text: chDB writes
// "Code: 27. DB::Exception: …", clickhouse-go "code: 27, message: …".
var codeRe = regexp.MustCompile(`(?i)\bcode: (\d+)`)

// permanentCodes are the ClickHouse errors that the same insert would meet
// again: the rows themselves are wrong for the table. Everything else (a
// network error, a server restarting, "too many parts", a memory limit) may
// pass, so the insert is worth retrying.
var permanentCodes = map[string]bool{
	"6":   true, // CANNOT_PARSE_TEXT
	"8":   true, // THERE_IS_NO_COLUMN
	"16":  true, // NO_SUCH_COLUMN_IN_TABLE
	"26":  true, // CANNOT_PARSE_QUOTED_STRING
	"27":  true, // CANNOT_PARSE_INPUT_ASSERTION_FAILED
	"38":  true, // CANNOT_PARSE_DATE
	"41":  true, // CANNOT_PARSE_DATETIME
	"53":  true, // TYPE_MISMATCH
	"62":  true, // SYNTAX_ERROR
	"69":  true, // ARGUMENT_OUT_OF_BOUND
	"70":  true, // CANNOT_CONVERT_TYPE
	"72":  true, // CANNOT_PARSE_NUMBER
	"117": true, // INCORRECT_DATA
	"131": true, // TOO_LARGE_STRING_SIZE
}

// tooManyPartitions is the text of the TOO_MANY_PARTS error (252) that an
// insert into more partitions than max_partitions_per_insert_block meets
// every time; the same code for too many parts to merge passes later.
const tooManyPartitions = "Too many partitions for single INSERT block"

// queryLimitCodes are the ClickHouse errors of a read that met a limit the
// reader set (ReaderConfig): the same read would meet it again.
var queryLimitCodes = map[string]bool{
	"158": true, // TOO_MANY_ROWS
	"159": true, // TIMEOUT_EXCEEDED
	"160": true, // TOO_SLOW
	"241": true, // MEMORY_LIMIT_EXCEEDED
	"307": true, // TOO_MANY_BYTES
	"396": true, // TOO_MANY_ROWS_OR_BYTES
}

// ErrorCode returns the ClickHouse error code err carries ("81"), or ""
// when it carries none.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	if m := codeRe.FindStringSubmatch(err.Error()); m != nil {
		return m[1]
	}
	return ""
}

// IsQueryLimit reports whether err, from a read, says the read met one of
// the reader's limits (time, memory): it asked for too much, and the
// caller should narrow it.
func IsQueryLimit(err error) bool {
	return queryLimitCodes[ErrorCode(err)]
}

// IsPermanent reports whether err, from a Conn, says the statement can never
// succeed as it is, so retrying it is pointless.
func IsPermanent(err error) bool {
	if err == nil {
		return false
	}
	text := err.Error()
	m := codeRe.FindStringSubmatch(text)
	return m != nil && (permanentCodes[m[1]] || m[1] == "252" && strings.Contains(text, tooManyPartitions))
}

// sessionSettings are engine settings every statement of ours runs with, where
// the engine has them. use_statistics = 0: ClickHouse 26.4 and later load the
// column statistics of every part a query may read, from disk for the parts
// merged since their cache's last refresh, which made reads of a store being
// written several times slower; ours are planned by keys and skip indexes.
var sessionSettings = map[string]string{"use_statistics": "0"}

// SessionSettings returns those of sessionSettings that the engine behind c
// knows, each with the value every statement should run with.
func SessionSettings(ctx context.Context, c Conn) (map[string]string, error) {
	out := map[string]string{}
	err := c.Query(ctx, "SELECT name FROM system.settings WHERE has(splitByChar(',', {names:String}), name)",
		Params{"names": strings.Join(slices.Sorted(maps.Keys(sessionSettings)), ",")}, func(row []byte) error {
			var s struct {
				Name string `json:"name"`
			}
			if err := json.Unmarshal(row, &s); err != nil {
				return err
			}
			out[s.Name] = sessionSettings[s.Name]
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("reading the engine's settings: %w", err)
	}
	return out, nil
}
