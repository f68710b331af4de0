package webchat

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
)

// web holds the browser assets: HTML templates and static CSS/JS, plain
// files with no build step.
//
//go:embed web
var webFS embed.FS

// pages are the parsed HTML templates of the web side.
type pages struct {
	chat   *template.Template
	login  *template.Template
	room   *template.Template
	notice *template.Template
}

func loadPages() (*pages, error) {
	parse := func(name string) (*template.Template, error) {
		t, err := template.ParseFS(webFS, "web/layout.html", "web/"+name)
		if err != nil {
			return nil, fmt.Errorf("webchat: parse %s: %w", name, err)
		}
		return t, nil
	}
	var p pages
	var err error
	if p.chat, err = parse("chat.html"); err != nil {
		return nil, err
	}
	if p.login, err = parse("login.html"); err != nil {
		return nil, err
	}
	if p.room, err = parse("room.html"); err != nil {
		return nil, err
	}
	if p.notice, err = parse("notice.html"); err != nil {
		return nil, err
	}
	return &p, nil
}

// pageData is the data of every page.
type pageData struct {
	Base     string // web path prefix
	Title    string
	Room     string // room name, "" for the QR-bound chat
	SignedIn bool
	Error    string
	Message  string
	State    string // login page: "confirm" or "invalid"
}

// render executes t into a buffer first, so that a template error never
// leaves a half-written page.
func (c *Connector) render(rw http.ResponseWriter, t *template.Template, status int, d pageData) {
	d.Base = c.base
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", d); err != nil {
		c.log.Error("webchat: render page", "error", err)
		http.Error(rw, "internal error", http.StatusInternalServerError)
		return
	}
	rw.Header().Set("Content-Type", "text/html; charset=utf-8")
	rw.Header().Set("Cache-Control", "no-store")
	rw.WriteHeader(status)
	_, _ = rw.Write(buf.Bytes())
}

func staticHandler() http.Handler {
	sub, err := fs.Sub(webFS, "web/static")
	if err != nil { // cannot happen: the directory is embedded
		return http.NotFoundHandler()
	}
	return http.FileServerFS(sub)
}
