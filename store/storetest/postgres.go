// Package storetest holds test helpers for code that persists through
// package store, in this module and in users' own tests.
package storetest

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
)

// EnvPostgres names the environment variable holding the DSN of a
// PostgreSQL server for tests.
const EnvPostgres = "XCONN_TEST_POSTGRES"

// PostgresDSN creates a fresh schema <prefix><random> on the server named
// by XCONN_TEST_POSTGRES, returns a DSN whose search_path is that schema,
// and drops the schema when the test ends, so that parallel tests never
// share tables. It skips the test with a clear message when the variable is
// unset.
func PostgresDSN(t testing.TB, prefix string) string {
	t.Helper()
	base := os.Getenv(EnvPostgres)
	if base == "" {
		t.Skip(EnvPostgres + " is not set; PostgreSQL tests skip")
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := prefix + hex.EncodeToString(b)
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec("CREATE SCHEMA " + schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		admin, err := sql.Open("pgx", base)
		if err != nil {
			t.Error(err)
			return
		}
		defer admin.Close()
		if _, err := admin.Exec("DROP SCHEMA " + schema + " CASCADE"); err != nil {
			t.Errorf("drop schema: %v", err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
