package store

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

//go:embed schema/*.sql
var schemaFS embed.FS

// Migration is one file of schema/: version Version of the store's schema.
type Migration struct {
	// Version is the file's number: 14 for 014_red_rollups.sql.
	Version uint32
	// Name is the file's name without .sql, as recorded in schema_migrations.
	Name string
	// Statements are the file's statements for one database, in order.
	Statements []string
}

var migrationFileRe = regexp.MustCompile(`^([0-9]{3})_[a-z0-9_]+\.sql$`)

// Migrations returns the schema's files, versions 1 to the latest in order,
// with their statements for database db.
func Migrations(db string) ([]Migration, error) {
	if !ValidDatabaseName(db) {
		return nil, fmt.Errorf("database name %q is not a plain identifier", db)
	}
	names, err := fs.Glob(schemaFS, "schema/*.sql")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []Migration
	for _, name := range names {
		base := path.Base(name)
		m := migrationFileRe.FindStringSubmatch(base)
		if m == nil {
			return nil, fmt.Errorf("schema file %s is not named NNN_name.sql", base)
		}
		v, _ := strconv.ParseUint(m[1], 10, 32)
		// Versions are compared as numbers: a gap or a repeated number would
		// make a store's recorded version skip or redo a file.
		if v != uint64(len(out)+1) {
			return nil, fmt.Errorf("schema file %s: version %d where %d was expected", base, v, len(out)+1)
		}
		b, err := schemaFS.ReadFile(name)
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: uint32(v), Name: strings.TrimSuffix(base, ".sql"),
			Statements: splitStatements(strings.ReplaceAll(string(b), "${db}", db))})
	}
	if len(out) == 0 {
		return nil, errors.New("no schema files")
	}
	return out, nil
}

// SchemaStatements returns the schema's statements, in order, for database db.
func SchemaStatements(db string) ([]string, error) {
	migs, err := Migrations(db)
	if err != nil {
		return nil, err
	}
	var stmts []string
	for _, m := range migs {
		stmts = append(stmts, m.Statements...)
	}
	return stmts, nil
}

// splitStatements splits SQL text on semicolons that end a line and drops
// comment-only chunks. Our schema files never put a semicolon at the end of a
// line inside a literal, so this is enough.
func splitStatements(sql string) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(sql, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "--") {
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
		if strings.HasSuffix(trimmed, ";") {
			if s := strings.TrimSuffix(strings.TrimSpace(cur.String()), ";"); s != "" {
				out = append(out, s)
			}
			cur.Reset()
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		out = append(out, s)
	}
	return out
}

// migrationsTable records which schema versions a store has: a row per
// version once its file's statements succeeded. A plain MergeTree, not a
// ReplacingMergeTree: two collectors starting together against one server may
// both apply a file and record it twice, which the readers (highest version)
// do not mind, and the extra row says when each did; nothing counts rows.
const migrationsTable = `CREATE TABLE IF NOT EXISTS %s.schema_migrations
(
    version     UInt32,
    name        String,
    applied_at  DateTime64(3) DEFAULT now64(3)
)
ENGINE = MergeTree
ORDER BY version`

// schemaAt is the schema version a store has recorded.
type schemaAt struct {
	// table is whether db.schema_migrations exists; stores written by a
	// release before it have none.
	table   bool
	version uint32
	name    string
}

func (a schemaAt) String() string {
	if a.version == 0 {
		return "version 0 (none recorded)"
	}
	return fmt.Sprintf("version %d (%s)", a.version, a.name)
}

// readSchemaAt reads the highest version recorded in db. It runs SELECTs
// only, so the query service can call it with read access alone.
func readSchemaAt(ctx context.Context, c Conn, db string) (schemaAt, error) {
	var at schemaAt
	err := c.Query(ctx, "SELECT 1 AS x FROM system.tables WHERE database = {db:String} AND name = 'schema_migrations'",
		Params{"db": db}, func([]byte) error {
			at.table = true
			return nil
		})
	if err != nil || !at.table {
		return at, err
	}
	// ORDER BY … LIMIT 1 rather than max(): a version recorded twice is one
	// row here, and an empty table no row (version 0).
	err = c.Query(ctx, "SELECT version, name FROM "+db+".schema_migrations ORDER BY version DESC LIMIT 1", nil,
		func(b []byte) error {
			var row struct {
				Version uint32 `json:"version"`
				Name    string `json:"name"`
			}
			if err := json.Unmarshal(b, &row); err != nil {
				return err
			}
			at.version, at.name = row.Version, row.Name
			return nil
		})
	return at, err
}

// ErrSchemaNewer is wrapped by the error of a store whose schema is newer
// than this build's: waiting does not help, unlike a store not upgraded yet.
var ErrSchemaNewer = errors.New("the store's schema is newer than this build's")

func newerSchemaError(db string, at schemaAt, latest Migration) error {
	return schemaNewer(fmt.Sprintf("the store's schema (database %s) is at %s, newer than this build's %d (%s): "+
		"run a tracesift of that version or later", db, at, latest.Version, latest.Name))
}

// schemaNewer is the error of a newer schema: its text, and ErrSchemaNewer.
type schemaNewer string

func (e schemaNewer) Error() string        { return string(e) }
func (e schemaNewer) Is(target error) bool { return target == ErrSchemaNewer }

// ApplySchema brings db's schema up to this build's: it applies the schema
// files above the version the store has recorded, recording each once its
// statements succeeded. A store whose schema is newer than this build's is
// refused before anything is changed: this build could not read or write it
// as that version expects.
func ApplySchema(ctx context.Context, c Conn, db string) error {
	migs, err := Migrations(db)
	if err != nil {
		return err
	}
	latest := migs[len(migs)-1]
	at, err := readSchemaAt(ctx, c, db)
	if err != nil {
		return fmt.Errorf("reading the store's schema version: %w", err)
	}
	if at.version > latest.Version {
		return newerSchemaError(db, at, latest)
	}
	// A store of a release before schema_migrations (or a new one) records
	// nothing, so every file is applied: what those releases did at every
	// start, safe because every statement is idempotent (TestSchemaStatements).
	// The same makes a start cut short between a file and its record, or two
	// collectors starting together, apply a file again harmlessly.
	for _, s := range []string{"CREATE DATABASE IF NOT EXISTS " + db, fmt.Sprintf(migrationsTable, db)} {
		if err := c.Exec(ctx, s, nil); err != nil {
			return fmt.Errorf("creating %s.schema_migrations: %w", db, err)
		}
	}
	for _, m := range migs {
		if m.Version <= at.version {
			continue
		}
		for _, s := range m.Statements {
			if err := c.Exec(ctx, s, nil); err != nil {
				return fmt.Errorf("applying schema %s, statement %q: %w", m.Name, firstLine(s), err)
			}
		}
		// Rendered here rather than bound by the server, so that both
		// engines run the same INSERT … SELECT of two literals.
		stmt, err := RenderParams("INSERT INTO "+db+".schema_migrations (version, name) SELECT {version:UInt32}, {name:String}",
			Params{"version": uint64(m.Version), "name": m.Name})
		if err != nil {
			return err
		}
		if err := c.Exec(ctx, stmt, nil); err != nil {
			return fmt.Errorf("recording schema %s: %w", m.Name, err)
		}
	}
	return nil
}

// CheckSchema returns an error unless db's schema is at this build's version.
// It only reads (SELECT), for the query service, which needs no DDL rights:
// the collector of the same version upgrades the store at its start.
func CheckSchema(ctx context.Context, c Conn, db string) error {
	migs, err := Migrations(db)
	if err != nil {
		return err
	}
	latest := migs[len(migs)-1]
	at, err := readSchemaAt(ctx, c, db)
	switch {
	case err != nil:
		return fmt.Errorf("reading the store's schema version: %w", err)
	case !at.table:
		return fmt.Errorf("the store (database %s) has no schema_migrations table, so no recorded schema version; "+
			"this tracesift-query needs version %d (%s): start the collector of this version first, which upgrades it",
			db, latest.Version, latest.Name)
	case at.version < latest.Version:
		return fmt.Errorf("the store's schema (database %s) is at %s, this tracesift-query needs version %d (%s): "+
			"start the collector of this version first, which upgrades it", db, at, latest.Version, latest.Name)
	case at.version > latest.Version:
		return newerSchemaError(db, at, latest)
	}
	return nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
