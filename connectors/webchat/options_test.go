package webchat_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connectors/webchat"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

func TestNewOptions(t *testing.T) {
	dir := t.TempDir()
	db, err := store.Open(context.Background(), "sqlite:"+filepath.Join(dir, "w.db"), store.Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sdk := connector.Options{Store: db}
	tests := []struct {
		name    string
		opts    webchat.Options
		wantErr string
	}{
		{"no store", webchat.Options{PublicURL: "http://127.0.0.1:8080"}, "Store or Options.DataDir is required"},
		{"no public URL", webchat.Options{SDK: sdk}, "PublicURL"},
		{"relative public URL", webchat.Options{SDK: sdk, PublicURL: "/chat"}, "PublicURL"},
		{"ftp public URL", webchat.Options{SDK: sdk, PublicURL: "ftp://example.com"}, "PublicURL"},
		{"ok", webchat.Options{SDK: sdk, PublicURL: "https://chat.example.com/"}, ""},
		{"ok with web path", webchat.Options{SDK: sdk, PublicURL: "http://127.0.0.1:8080", WebPath: "/chat/"}, ""},
		{"ok on its own listener", webchat.Options{SDK: sdk, PublicURL: "http://127.0.0.1:8080", SeparateWeb: true}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := webchat.New(tt.opts)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want one mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := strings.TrimSuffix(tt.opts.PublicURL, "/") + "/" + strings.Trim(tt.opts.WebPath, "/") + "/"
			if tt.opts.WebPath == "" {
				want = strings.TrimSuffix(tt.opts.PublicURL, "/") + "/webchat/"
			}
			if c.WebURL() != want {
				t.Fatalf("WebURL %q, want %q", c.WebURL(), want)
			}
		})
	}
}

// TestCardAndSkill: the Card derived from the Identity and the
// registrations is the one the hand-written Card of earlier versions
// declared, plus the send tool's optional file argument
// (testdata/connector-card.json, without the build block), and
// the Skill names the send tool.
func TestCardAndSkill(t *testing.T) {
	ctx := context.Background()
	conn, err := webchat.New(webchat.Options{SDK: connector.Options{DataDir: t.TempDir(), APIKey: testAPIKey}, PublicURL: "http://127.0.0.1:8080"})
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Server().Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer conn.Server().Close(ctx)
	card := conn.Server().Card()
	if vs := protocol.ValidateCard(card); len(vs) > 0 {
		t.Fatalf("Card: %v", vs)
	}
	card.Build = protocol.Build{}
	got, _ := json.MarshalIndent(card, "", "  ")
	want, err := os.ReadFile(filepath.Join("testdata", "connector-card.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("Card:\n%s\nwant:\n%s", got, want)
	}
	h, err := protocol.ParseSkillHeader(webchat.Skill())
	if err != nil || h.Name != webchat.SkillName || h.Name != protocol.PrimarySkillName(webchat.CardID) {
		t.Fatalf("Skill header %+v, %v", h, err)
	}
	if !strings.Contains(string(webchat.Skill()), webchat.ToolSend) {
		t.Fatal("the Skill does not say which tool sends proactive messages")
	}
}

// TestSeparateWeb: by default the SDK server serves the web side too; with
// SeparateWeb only WebHandler does, and the server keeps to the protocol.
func TestSeparateWeb(t *testing.T) {
	ctx := context.Background()
	for _, separate := range []bool{false, true} {
		conn, err := webchat.New(webchat.Options{SDK: connector.Options{DataDir: t.TempDir()},
			PublicURL: "http://127.0.0.1:8080", SeparateWeb: separate})
		if err != nil {
			t.Fatal(err)
		}
		if err := conn.Server().Start(ctx); err != nil {
			t.Fatal(err)
		}
		status := func(h http.Handler, path string) int {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
			return rec.Code
		}
		wantServer := http.StatusOK
		if separate {
			wantServer = http.StatusNotFound
		}
		if got := status(conn.Server(), "/webchat/"); got != wantServer {
			t.Errorf("separate=%v: server GET /webchat/: %d, want %d", separate, got, wantServer)
		}
		if got := status(conn.WebHandler(), "/webchat/"); got != http.StatusOK {
			t.Errorf("separate=%v: web handler GET /webchat/: %d", separate, got)
		}
		if got := status(conn.WebHandler(), "/connector-card.json"); got != http.StatusNotFound {
			t.Errorf("separate=%v: web handler serves the Card: %d", separate, got)
		}
		if got := status(conn.Server(), "/connector-card.json"); got != http.StatusOK {
			t.Errorf("separate=%v: server GET /connector-card.json: %d", separate, got)
		}
		if err := conn.Server().Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
