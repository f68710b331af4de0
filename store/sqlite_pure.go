//go:build !sqlite_cgo

package store

import (
	"database/sql"
	"errors"
	"net/url"

	"modernc.org/sqlite" // driver "sqlite"
)

// SQLiteEngine names the SQLite engine this build drives: the pure Go
// modernc.org/sqlite by default; github.com/mattn/go-sqlite3 (cgo) when
// built with -tags sqlite_cgo.
const SQLiteEngine = "modernc.org/sqlite (pure Go)"

// openSQLitePool opens a pool of connections to the SQLite file path, each
// set up with pragmas (in order) and, when immediate is set, beginning its
// transactions with BEGIN IMMEDIATE.
func openSQLitePool(path string, pragmas []string, immediate bool) (*sql.DB, error) {
	q := url.Values{}
	for _, p := range pragmas {
		q.Add("_pragma", p)
	}
	if immediate {
		q.Set("_txlock", "immediate")
	}
	return sql.Open("sqlite", "file:"+path+"?"+q.Encode())
}

// sqliteBusy is SQLite's primary result code SQLITE_BUSY.
const sqliteBusy = 5

// isSQLiteBusy reports whether err is SQLITE_BUSY (or an extended code of
// it).
func isSQLiteBusy(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqliteBusy
}
