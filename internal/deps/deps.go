// Package deps pins the project's chosen dependencies while the packages that
// use them are being written. It is removed once every dependency has a user.
package deps

import (
	_ "github.com/coder/websocket"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/santhosh-tekuri/jsonschema/v6"
	_ "github.com/skip2/go-qrcode"
	_ "github.com/spf13/cobra"
	_ "go.uber.org/goleak"
	_ "golang.org/x/term"
	_ "modernc.org/sqlite"
)
