package store

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"
)

//go:embed schema/*.sql
var schemaFS embed.FS

// SchemaStatements returns the schema's statements, in order, for database db.
func SchemaStatements(db string) ([]string, error) {
	if !ValidDatabaseName(db) {
		return nil, fmt.Errorf("database name %q is not a plain identifier", db)
	}
	names, err := fs.Glob(schemaFS, "schema/*.sql")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var stmts []string
	for _, name := range names {
		b, err := schemaFS.ReadFile(name)
		if err != nil {
			return nil, err
		}
		stmts = append(stmts, splitStatements(strings.ReplaceAll(string(b), "${db}", db))...)
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

// ApplySchema creates every table and view that is missing. It is safe to run
// on every start.
func ApplySchema(ctx context.Context, c Conn, db string) error {
	stmts, err := SchemaStatements(db)
	if err != nil {
		return err
	}
	for _, s := range stmts {
		if err := c.Exec(ctx, s, nil); err != nil {
			return fmt.Errorf("applying schema statement %q: %w", firstLine(s), err)
		}
	}
	return nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
