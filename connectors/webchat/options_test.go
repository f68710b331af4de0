package webchat_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

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
	tests := []struct {
		name    string
		opts    webchat.Options
		wantErr string
	}{
		{"no store", webchat.Options{PublicURL: "http://127.0.0.1:8080"}, "Store is required"},
		{"no public URL", webchat.Options{Store: db}, "PublicURL"},
		{"relative public URL", webchat.Options{Store: db, PublicURL: "/chat"}, "PublicURL"},
		{"ftp public URL", webchat.Options{Store: db, PublicURL: "ftp://example.com"}, "PublicURL"},
		{"ok", webchat.Options{Store: db, PublicURL: "https://chat.example.com/"}, ""},
		{"ok with web path", webchat.Options{Store: db, PublicURL: "http://127.0.0.1:8080", WebPath: "/chat/"}, ""},
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

func TestCardAndSkill(t *testing.T) {
	card := webchat.Card()
	if vs := protocol.ValidateCard(card); len(vs) > 0 {
		t.Fatalf("Card: %v", vs)
	}
	if card.ConnectorCardID != "im.webchat" || card.Supports.Targets[0].Provider != "webchat" ||
		card.Supports.Targets[0].Label != "Web Chat" || !card.DeclaresProfile(protocol.ProfileIMv2) {
		t.Fatalf("Card identity: %+v", card)
	}
	qr, ok := card.AuthFlow(webchat.FlowQR)
	if !ok || qr.Type != protocol.AuthFlowQRLogin {
		t.Fatalf("QR flow: %+v", qr)
	}
	room, ok := card.AuthFlow(webchat.FlowRoom)
	if !ok || room.Type != protocol.AuthFlowForm || len(room.Fields) != 2 || !room.Fields[1].IsSecret() || !room.Fields[0].Required || !room.Fields[1].Required {
		t.Fatalf("room flow: %+v", room)
	}
	h, err := protocol.ParseSkillHeader(webchat.Skill())
	if err != nil || h.Name != webchat.SkillName || h.Name != protocol.PrimarySkillName(webchat.CardID) {
		t.Fatalf("Skill header %+v, %v", h, err)
	}
	if !strings.Contains(string(webchat.Skill()), webchat.ToolSend) {
		t.Fatal("the Skill does not say which tool sends proactive messages")
	}
}
