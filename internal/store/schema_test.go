package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMigrations(t *testing.T) {
	migs, err := Migrations("tsdb")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(migs), 14)
	var all []string
	for i, m := range migs {
		assert.Equal(t, uint32(i+1), m.Version, "versions are 1, 2, … in file order")
		assert.True(t, strings.HasPrefix(m.Name, fmt.Sprintf("%03d_", i+1)), m.Name)
		assert.NotEmpty(t, m.Statements, m.Name)
		all = append(all, m.Statements...)
	}
	assert.Equal(t, "001_init", migs[0].Name)
	stmts, err := SchemaStatements("tsdb")
	require.NoError(t, err)
	assert.Equal(t, stmts, all)
	_, err = Migrations("bad-name")
	require.Error(t, err)
}

// versionConn answers the two reads of the schema version as a store at
// version at would (table: whether it has schema_migrations) and keeps the
// statements it is asked to run.
type versionConn struct {
	table bool
	at    uint32
	execs []string
}

func (c *versionConn) Exec(_ context.Context, q string, _ Params) error {
	c.execs = append(c.execs, q)
	return nil
}

func (c *versionConn) Insert(context.Context, string, Format, []byte) error {
	return errors.New("versionConn: no inserts")
}

func (c *versionConn) Query(_ context.Context, q string, _ Params, row func([]byte) error) error {
	switch {
	case strings.Contains(q, "system.tables"):
		if c.table {
			return row([]byte(`{"x":1}`))
		}
		return nil
	case strings.Contains(q, ".schema_migrations"):
		if !c.table {
			return errors.New("UNKNOWN_TABLE")
		}
		if c.at > 0 {
			return row([]byte(fmt.Sprintf(`{"version":%d,"name":"%03d_later"}`, c.at, c.at)))
		}
		return nil
	}
	return fmt.Errorf("versionConn: unexpected query %q", q)
}

func (c *versionConn) Close() error { return nil }

// The query service may have read access only: CheckSchema runs no
// statement whatever the store's version. Neither does ApplySchema on a
// store newer than the build.
func TestCheckSchemaOnlyReads(t *testing.T) {
	ctx := context.Background()
	migs, err := Migrations("tsdb")
	require.NoError(t, err)
	latest := migs[len(migs)-1].Version
	for _, tc := range []struct {
		conn versionConn
		want string
	}{
		{versionConn{}, "has no schema_migrations table"},
		{versionConn{table: true}, "is at version 0 (none recorded), this tracesift-query needs version"},
		{versionConn{table: true, at: latest - 1}, fmt.Sprintf("is at version %d (%03d_later), this tracesift-query needs version %d (%s)",
			latest-1, latest-1, latest, migs[len(migs)-1].Name)},
		{versionConn{table: true, at: latest}, ""},
		{versionConn{table: true, at: latest + 1}, fmt.Sprintf("is at version %d (%03d_later), newer than this build's %d",
			latest+1, latest+1, latest)},
	} {
		c := tc.conn
		err := CheckSchema(ctx, &c, "tsdb")
		if tc.want == "" {
			require.NoError(t, err)
		} else {
			require.ErrorContains(t, err, tc.want)
		}
		assert.Empty(t, c.execs, "%+v", tc.conn)
	}

	newer := versionConn{table: true, at: latest + 1}
	require.ErrorContains(t, ApplySchema(ctx, &newer, "tsdb"), "run a tracesift of that version or later")
	assert.Empty(t, newer.execs, "a newer store is left as it is")

	// At the build's version a start only makes sure of the database and
	// the table; one a version behind applies and records the last file.
	current := versionConn{table: true, at: latest}
	require.NoError(t, ApplySchema(ctx, &current, "tsdb"))
	assert.Len(t, current.execs, 2)
	behind := versionConn{table: true, at: latest - 1}
	require.NoError(t, ApplySchema(ctx, &behind, "tsdb"))
	require.Len(t, behind.execs, 2+len(migs[len(migs)-1].Statements)+1)
	assert.Equal(t, fmt.Sprintf("INSERT INTO tsdb.schema_migrations (version, name) SELECT %d, '%s'", latest, migs[len(migs)-1].Name),
		behind.execs[len(behind.execs)-1])
}

// A newer schema is told apart from one not upgraded yet: tracesift-query
// waits for the second, not the first.
func TestNewerSchemaIsErrSchemaNewer(t *testing.T) {
	migs, err := Migrations("ts")
	require.NoError(t, err)
	latest := migs[len(migs)-1].Version
	err = CheckSchema(context.Background(), &versionConn{table: true, at: latest + 1}, "ts")
	require.ErrorIs(t, err, ErrSchemaNewer)
	err = CheckSchema(context.Background(), &versionConn{table: true, at: latest - 1}, "ts")
	require.Error(t, err)
	require.NotErrorIs(t, err, ErrSchemaNewer)
}
