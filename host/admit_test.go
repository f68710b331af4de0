package host

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/xconn/xconn/protocol"
)

func TestAdmitSuccessKeepsPrefixAndPersists(t *testing.T) {
	t.Parallel()
	f := newFakeConnector(t, "im.fake", "/prefix")
	th := newTestHost(t, "", nil)
	c := th.admitOnline(t, f)
	if c.CardID != "im.fake" || c.BaseURL != f.baseURL() || c.Health != HealthOK {
		t.Fatalf("connector = %+v", c)
	}
	if len(c.Skill) == 0 {
		t.Fatal("skill not stored")
	}
	e, err := th.db.GetCatalog(ctxT(t), "im.fake")
	if err != nil {
		t.Fatal(err)
	}
	if e.APIKey != f.apiKey || e.BaseURL != f.baseURL() {
		t.Fatalf("catalog entry = %+v", e)
	}
	eventually(t, "connector id stored", func() bool {
		e, _ := th.db.GetCatalog(ctxT(t), "im.fake")
		return e.ConnectorID == "conn_1"
	})
	// An edit: the same Base URL again keeps the one record.
	if _, err := th.Admit(ctxT(t), f.baseURL(), f.apiKey); err != nil {
		t.Fatalf("re-admit: %v", err)
	}
	all, _ := th.db.ListCatalog(ctxT(t))
	if len(all) != 1 {
		t.Fatalf("catalog has %d entries, want 1", len(all))
	}
}

func TestAdmitSkillAbsentIsFine(t *testing.T) {
	t.Parallel()
	f := newFakeConnector(t, "im.fake", "")
	f.set(func(f *fakeConnector) { f.skill = nil })
	th := newTestHost(t, "", nil)
	c, err := th.Admit(ctxT(t), f.baseURL(), f.apiKey)
	if err != nil {
		t.Fatal(err)
	}
	if c.Skill != nil {
		t.Fatal("skill should be nil")
	}
}

func TestAdmitRefusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		setup  func(f *fakeConnector)
		url    func(f *fakeConnector) string
		key    string
		reason RefusalReason
	}{
		{name: "query in base URL", url: func(f *fakeConnector) string { return f.baseURL() + "?x=1" }, reason: ReasonInvalidBaseURL},
		{name: "userinfo", url: func(f *fakeConnector) string { return "http://u:p@127.0.0.1:1" }, reason: ReasonInvalidBaseURL},
		{name: "ftp scheme", url: func(f *fakeConnector) string { return "ftp://127.0.0.1" }, reason: ReasonInvalidBaseURL},
		{name: "card 500", setup: func(f *fakeConnector) { f.cardStatus = http.StatusInternalServerError }, reason: ReasonCardUnavailable},
		{name: "card invalid", setup: func(f *fakeConnector) { f.card.Supports.Profiles = nil }, reason: ReasonInvalidCard},
		{name: "old protocol", setup: func(f *fakeConnector) { f.card.ProtocolVersion = "2.0" }, reason: ReasonUnsupportedVersion},
		{name: "future protocol", setup: func(f *fakeConnector) { f.card.ProtocolVersion = "4.0" }, reason: ReasonUnsupportedVersion},
		{name: "skill 500", setup: func(f *fakeConnector) { f.skillStatus = http.StatusInternalServerError }, reason: ReasonSkillUnavailable},
		{name: "skill bad name", setup: func(f *fakeConnector) { f.skill = []byte("---\nname: im-connector-reply\n---\n") }, reason: ReasonInvalidSkill},
		{name: "wrong api key", key: "wrong-key-000000", reason: ReasonUnauthorized},
		{name: "no api key", key: "-", reason: ReasonAPIKeyRequired},
		{name: "health 503", setup: func(f *fakeConnector) { f.healthStatus = http.StatusServiceUnavailable }, reason: ReasonHealthFailed},
		{name: "health card id", setup: func(f *fakeConnector) { f.healthCardID = "im.other" }, reason: ReasonHealthMismatch},
		{name: "health version", setup: func(f *fakeConnector) { f.healthVer = "9.9.9" }, reason: ReasonHealthMismatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeConnector(t, "im.fake", "")
			if tt.setup != nil {
				f.set(tt.setup)
			}
			th := newTestHost(t, "", nil)
			u := f.baseURL()
			if tt.url != nil {
				u = tt.url(f)
			}
			key := f.apiKey
			switch tt.key {
			case "":
			case "-":
				key = ""
			default:
				key = tt.key
			}
			_, err := th.Admit(ctxT(t), u, key)
			var ae *AdmissionError
			if !errors.As(err, &ae) {
				t.Fatalf("err = %v, want *AdmissionError", err)
			}
			if ae.Reason != tt.reason {
				t.Fatalf("reason = %s, want %s (%v)", ae.Reason, tt.reason, err)
			}
			if key != "" && strings.Contains(err.Error(), key) {
				t.Fatal("refusal text contains the API key")
			}
			if all, _ := th.db.ListCatalog(ctxT(t)); len(all) != 0 {
				t.Fatalf("refused connector was persisted: %v", all)
			}
		})
	}
}

func TestAdmitInvalidCardListsViolations(t *testing.T) {
	t.Parallel()
	f := newFakeConnector(t, "im.fake", "")
	f.set(func(f *fakeConnector) { f.card.Tools[0].InputSchema = []byte(`{"type":"object"}`) })
	th := newTestHost(t, "", nil)
	_, err := th.Admit(ctxT(t), f.baseURL(), f.apiKey)
	var ae *AdmissionError
	if !errors.As(err, &ae) || ae.Reason != ReasonInvalidCard || len(ae.Violations) == 0 {
		t.Fatalf("err = %v", err)
	}
	found := false
	for _, v := range ae.Violations {
		if strings.Contains(v.Path, "tools[0].input_schema") {
			found = true
		}
	}
	if !found {
		t.Fatalf("violations do not point at the tool schema: %v", ae.Violations)
	}
}

func TestAdmitDuplicateCardFromAnotherBaseURL(t *testing.T) {
	t.Parallel()
	f1 := newFakeConnector(t, "im.fake", "")
	f2 := newFakeConnector(t, "im.fake", "/other")
	th := newTestHost(t, "", nil)
	th.admitOnline(t, f1)
	_, err := th.Admit(ctxT(t), f2.baseURL(), f2.apiKey)
	var ae *AdmissionError
	if !errors.As(err, &ae) || ae.Reason != ReasonDuplicateCard {
		t.Fatalf("err = %v, want duplicate_card", err)
	}
	c, _ := th.Connector("im.fake")
	if c.BaseURL != f1.baseURL() {
		t.Fatalf("base URL changed to %s", c.BaseURL)
	}
}

// The refusal text names its reason once, then the cause and violations.
func TestAdmissionErrorText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  *AdmissionError
		want string
	}{
		{"protocol error with the reason's code", refuse(ReasonUnsupportedVersion,
			protocol.Errorf(protocol.CodeUnsupportedProtocolVersion, "protocol version 2.0 is below the supported minimum 3.0"),
			protocol.Violation{Path: "protocol_version", Reason: `must be "3.0", not "2.0"`}),
			"connector refused: unsupported_protocol_version: protocol version 2.0 is below the supported minimum 3.0\n  protocol_version: must be \"3.0\", not \"2.0\""},
		{"protocol error without a message", refuse(ReasonUnsupportedVersion, &protocol.Error{Code: protocol.CodeUnsupportedProtocolVersion}),
			"connector refused: unsupported_protocol_version"},
		{"other protocol error", refuse(ReasonHealthFailed, protocol.Errorf(protocol.CodeInternal, "boom")),
			"connector refused: health_failed: internal_error: boom"},
		{"plain error", refuse(ReasonCardUnavailable, &statusError{protocol.PathCard, 404}),
			"connector refused: card_unavailable: GET /connector-card.json: HTTP 404"},
		{"violations only", &AdmissionError{Reason: ReasonInvalidCard, Violations: protocol.Violations{{Path: "build", Reason: "is required"}}},
			"connector refused: invalid_card\n  build: is required"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, got, tt.want)
		}
	}
}
