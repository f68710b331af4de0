package e2e_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/xconn/xconn/connector/connectortest/e2e"
	"github.com/xconn/xconn/protocol"
)

func TestSecretsFind(t *testing.T) {
	s := e2e.Secrets{"short", "bot-token-123"}.With("app-secret-xyz", "", "bot-token-123", "tiny")
	if len(s) != 3 {
		t.Fatalf("With kept %q, want the two long values once each plus the short one given literally", s)
	}
	for _, tc := range []struct {
		text, line string
		found      bool
	}{
		{"nothing here\nat all", "", false},
		{"short values are too common to look for: short", "", false},
		{"first line\nlevel=INFO token=bot-token-123 ok\nlast", "level=INFO token=[secret #1] ok", true},
		{`{"a":"app-secret-xyz","b":"bot-token-123"}`, `{"a":"[secret #2]","b":"[secret #1]"}`, true},
		{"at the end: app-secret-xyz", "at the end: [secret #2]", true},
	} {
		line, found := s.Find(tc.text)
		if found != tc.found || line != tc.line {
			t.Errorf("Find(%q) = %q %v, want %q %v", tc.text, line, found, tc.line, tc.found)
		}
	}
}

func TestOfInput(t *testing.T) {
	card := &protocol.Card{AuthFlows: []protocol.AuthFlow{{ID: "login", Fields: []protocol.AuthField{
		{Name: "user", InputType: protocol.InputText},
		{Name: "password", InputType: protocol.InputPassword},
		{Name: "token", InputType: protocol.InputText, Secret: true},
	}}}}
	got := e2e.OfInput(card, "login", map[string]string{"user": "ann-the-user", "password": "pw-123456", "token": "tok-abcdef"})
	if strings.Join(got, ",") != "pw-123456,tok-abcdef" {
		t.Fatalf("OfInput = %q", got)
	}
	if got := e2e.OfInput(card, "other", map[string]string{"token": "tok-abcdef"}); len(got) != 0 {
		t.Fatalf("an unknown flow gave %q", got)
	}
}

func TestLogs(t *testing.T) {
	var l e2e.Logs
	l.Logger().Debug("hello", "k", "v")
	if !strings.Contains(l.String(), `level=DEBUG msg=hello k=v`) {
		t.Fatalf("logs %q", l.String())
	}
	big := make([]byte, e2e.MaxLogBytes)
	if n, err := l.Write(big); n != len(big) || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if s := l.String(); len(s) > e2e.MaxLogBytes+200 || !strings.Contains(s, "bytes of later output dropped") {
		t.Fatalf("a full Logs kept %d bytes", len(s))
	}
}

// A secret found in a log line is shown masked, with the line it is in.
func ExampleSecrets_Find() {
	secrets := e2e.Secrets{"123456:bot-token"}
	logs := "level=INFO msg=started\nlevel=WARN msg=\"send failed\" url=https://api.example/bot123456:bot-token/sendMessage\n"
	if line, ok := secrets.Find(logs); ok {
		fmt.Println("leak:", line)
	}
	// Output:
	// leak: level=WARN msg="send failed" url=https://api.example/bot[secret #0]/sendMessage
}

// The secrets of a sign-in are the values of the fields its Card flow
// marks secret.
func ExampleOfInput() {
	card := &protocol.Card{AuthFlows: []protocol.AuthFlow{{ID: "room_login", Fields: []protocol.AuthField{
		{Name: "room", InputType: protocol.InputText},
		{Name: "access_code", InputType: protocol.InputPassword},
	}}}}
	fmt.Println(e2e.OfInput(card, "room_login", map[string]string{"room": "lobby", "access_code": "c0de-c0de"}))
	// Output:
	// [c0de-c0de]
}
