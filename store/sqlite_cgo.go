//go:build sqlite_cgo

package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"

	"github.com/mattn/go-sqlite3"
)

// SQLiteEngine names the SQLite engine this build drives: the pure Go
// modernc.org/sqlite by default; github.com/mattn/go-sqlite3 (cgo) when
// built with -tags sqlite_cgo.
const SQLiteEngine = "github.com/mattn/go-sqlite3 (cgo)"

// openSQLitePool opens a pool of connections to the SQLite file path, each
// set up with pragmas (in order) and, when immediate is set, beginning its
// transactions with BEGIN IMMEDIATE.
func openSQLitePool(path string, pragmas []string, immediate bool) (*sql.DB, error) {
	q := url.Values{}
	if immediate {
		q.Set("_txlock", "immediate")
	}
	return sql.OpenDB(&cgoConnector{dsn: "file:" + path + "?" + q.Encode(), pragmas: pragmas}), nil
}

// cgoConnector opens mattn/go-sqlite3 connections and runs the store's
// pragmas on each (its DSN knows only some of them).
type cgoConnector struct {
	dsn     string
	pragmas []string
	d       sqlite3.SQLiteDriver
}

func (c *cgoConnector) Connect(context.Context) (driver.Conn, error) {
	conn, err := c.d.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	sc := conn.(*sqlite3.SQLiteConn)
	for _, p := range c.pragmas {
		if _, err := sc.Exec("PRAGMA "+p, nil); err != nil {
			sc.Close()
			return nil, fmt.Errorf("store: sqlite pragma %s: %w", p, err)
		}
	}
	return conn, nil
}

func (c *cgoConnector) Driver() driver.Driver { return &c.d }

// isSQLiteBusy reports whether err is SQLITE_BUSY (or an extended code of
// it).
func isSQLiteBusy(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && se.Code == sqlite3.ErrBusy
}
