package host

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/testrig/sdkfixture"
)

// These tests run upload-reference arguments and files in tool results
// through the connector SDK, over real sockets.

const (
	toolDocSend = "doc_send"
	toolShot    = "screen_shot"
)

// DocIn declares an upload reference (protocol.FormatUploadRef).
type DocIn struct {
	Doc     connector.Upload `json:"doc" desc:"The document to send."`
	Caption string           `json:"caption,omitempty"`
}

// filesConnector is an SDK connector with a tool that takes an upload
// reference and a tool that returns a file.
type filesConnector struct {
	srv  *connector.Server
	url  string
	mu   chan struct{}
	sent []string // "filename:content" of each doc_send
}

func startFilesConnector(t *testing.T) *filesConnector {
	t.Helper()
	fc := &filesConnector{mu: make(chan struct{}, 1)}
	srv, err := connector.New(connector.Options{Card: sdkfixture.FixtureCard(), Skill: []byte(sdkfixture.FixtureSkillMD),
		Store: connectortest.NewStore(t), APIKey: sdkKey, DataDir: t.TempDir(), LeaseGrace: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	errs := []error{
		connector.AddTool(srv, toolDocSend, func(ctx context.Context, c *connector.Call, in DocIn) (map[string]any, error) {
			r, err := in.Doc.Open()
			if err != nil {
				return nil, err
			}
			defer r.Close()
			b, err := io.ReadAll(r)
			if err != nil {
				return nil, err
			}
			fc.mu <- struct{}{}
			fc.sent = append(fc.sent, in.Doc.Filename+":"+string(b))
			<-fc.mu
			return map[string]any{"status": "sent", "bytes": len(b)}, nil
		}, connector.ToolOptions{Description: "Send a document.", SideEffect: true}),
		connector.AddTool(srv, toolShot, func(ctx context.Context, c *connector.Call, in struct{}) (map[string]any, error) {
			png, err := c.Channel.CacheFile(ctx, connector.OutgoingFile{Name: "screen.png", MimeType: "image/png", Content: strings.NewReader("\x89PNG fake pixels")})
			if err != nil {
				return nil, err
			}
			log, err := c.Channel.CacheFile(ctx, connector.OutgoingFile{Name: "log.txt", MimeType: "text/plain", Content: strings.NewReader("log line")})
			if err != nil {
				return nil, err
			}
			gone := log
			gone.DownloadURL = "/files/refs/does-not-exist"
			return map[string]any{"screenshot": png, "extra": []any{log, gone}, "device": "pixel"}, nil
		}, connector.ToolOptions{Description: "Take a screenshot."}),
		srv.AddAuthFlow(sdkfixture.FlowTokenForm, connector.Form(func(ctx context.Context, ch *connector.Channel, in connector.Input) (connector.Binding, error) {
			return connector.Binding{Data: []byte(in.Secret("token")), DisplayName: "Files user"}, nil
		})),
		srv.AddAuthFlow(sdkfixture.FlowQR, connector.QR(connector.QRFlow{Issue: func(ctx context.Context, q *connector.QRSession) (string, error) {
			return "https://files.invalid/?t=" + q.Token, nil
		}})),
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	srv.OnAssistantMessage(func(ctx context.Context, ch *connector.Channel, m *connector.AssistantMessage) error { return nil })
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Close(ctx)
		hs.CloseClientConnections()
		hs.Close()
	})
	fc.srv, fc.url = srv, hs.URL
	return fc
}

func (fc *filesConnector) sentDocs() []string {
	fc.mu <- struct{}{}
	defer func() { <-fc.mu }()
	return append([]string(nil), fc.sent...)
}

// filesHost admits a filesConnector and signs user in; the agent hands each
// user message to msgs.
func filesHost(t *testing.T, fc *filesConnector, user string, mod func(*Options)) (*testHost, string, chan *UserMessage) {
	t.Helper()
	msgs := make(chan *UserMessage, 8)
	th := newTestHost(t, "", func(o *Options) {
		o.Agent = AgentFunc(func(_ context.Context, m *UserMessage, _ ReplyStream) error { msgs <- m; return nil })
		if mod != nil {
			mod(o)
		}
	})
	if _, err := th.Admit(ctxT(t), fc.url, sdkKey); err != nil {
		t.Fatal(err)
	}
	ucID, _ := sdkSignin(t, th, user)
	return th, ucID, msgs
}

// receiveFile publishes a user message with one file and returns it as the
// agent got it.
func receiveFile(t *testing.T, th *testHost, fc *filesConnector, ucID, name, content string, msgs chan *UserMessage) File {
	t.Helper()
	uc, _ := th.db.GetUserChannel(ctxT(t), ucID)
	ch, err := fc.srv.Channel(uc.ChannelID)
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.Publish(ctxT(t), connector.UserMessage{Text: "here", Files: []connector.OutgoingFile{{Name: name, MimeType: "text/plain", Content: strings.NewReader(content)}}}); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-msgs:
		if len(m.Files) != 1 {
			t.Fatalf("message files %+v", m.Files)
		}
		return m.Files[0]
	case <-time.After(10 * time.Second):
		t.Fatal("no user message")
	}
	return File{}
}

func TestUploadRefArgumentsProjectedAndConverted(t *testing.T) {
	t.Parallel()
	fc := startFilesConnector(t)
	var packets syncBuf
	th, ucID, msgs := filesHost(t, fc, "ann", func(o *Options) {
		o.OnPacket = func(_ protocol.Direction, _ string, env *protocol.Envelope) {
			if env.Type == protocol.TypeToolInvoke {
				packets.Write(env.Payload)
				packets.Write([]byte("\n"))
			}
		}
	})
	ctx := ctxT(t)
	in := receiveFile(t, th, fc, ucID, "report.txt", "quarterly numbers", msgs)
	if !strings.HasPrefix(in.Ref, FileRefPrefix) || in.Ref == in.FileRef {
		t.Fatalf("received file has ref %q (connector's %q)", in.Ref, in.FileRef)
	}
	if got, ok := th.LookupFile("ann", in.Ref); !ok || got.Path != in.Path {
		t.Fatalf("LookupFile = %+v %v", got, ok)
	}
	if _, ok := th.LookupFile("bob", in.Ref); ok {
		t.Fatal("another user resolves the file_ref")
	}

	// The model sees a file_ref argument, not the connector's upload reference.
	defs, err := th.Tools(ctx, "ann", ucID)
	if err != nil {
		t.Fatal(err)
	}
	var def FunctionDef
	for _, d := range defs {
		if d.Name == toolDocSend {
			def = d
		}
	}
	if strings.Join(def.FileArgs, ",") != "doc" {
		t.Fatalf("file args %v of %+v", def.FileArgs, def)
	}
	params := string(def.Parameters)
	if strings.Contains(params, `"format"`) || !strings.Contains(params, "file_ref of a file of this conversation") ||
		!strings.Contains(params, "The document to send.") || !strings.Contains(params, `"caption"`) {
		t.Fatalf("projected parameters: %s", params)
	}

	// The host uploads the file and passes the connector's reference.
	res, err := th.Invoke(ctx, "ann", ucID, toolDocSend, json.RawMessage(`{"connector_channel_id":"x","doc":"`+in.Ref+`","caption":"Q3"}`), "call-1")
	if err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	if docs := fc.sentDocs(); len(docs) != 1 || docs[0] != "report.txt:quarterly numbers" {
		t.Fatalf("connector received %v", docs)
	}
	if !strings.Contains(string(res.Output), `"sent"`) {
		t.Fatalf("output %s", res.Output)
	}
	wire := packets.String()
	if strings.Contains(wire, in.Ref) || !strings.Contains(wire, `"caption":"Q3"`) {
		t.Fatalf("tool.invoke payload: %s", wire)
	}

	// References the user does not have fail before anything is sent.
	tests := []struct {
		name, user, args string
		opts             []InvokeOption
		code             protocol.Code
	}{
		{"unknown ref", "ann", `{"connector_channel_id":"x","doc":"hfile_nope"}`, nil, protocol.CodeInvalidArguments},
		{"connector's own ref", "ann", `{"connector_channel_id":"x","doc":"` + in.FileRef + `"}`, nil, protocol.CodeInvalidArguments},
		{"not a string", "ann", `{"connector_channel_id":"x","doc":42}`, nil, protocol.CodeInvalidArguments},
		{"resolver with its own file", "ann", `{"connector_channel_id":"x","doc":"mine-1"}`, []InvokeOption{WithFileResolver(func(ref string) (OutgoingFile, bool) {
			p := filepath.Join(t.TempDir(), "mine.txt")
			_ = os.WriteFile(p, []byte("from the platform"), 0o600)
			return OutgoingFile{Path: p}, ref == "mine-1"
		})}, ""},
	}
	for _, tt := range tests {
		_, err := th.Invoke(ctx, tt.user, ucID, toolDocSend, json.RawMessage(tt.args), "call-"+tt.name, tt.opts...)
		if code(err) != tt.code && !(tt.code == "" && err == nil) {
			t.Errorf("%s: err %v, want code %q", tt.name, err, tt.code)
		}
	}
	if docs := fc.sentDocs(); len(docs) != 2 || docs[1] != "mine.txt:from the platform" {
		t.Fatalf("connector received %v", docs)
	}
	// A file gone from disk is reported, not uploaded empty.
	_ = os.Remove(in.Path)
	if _, err := th.Invoke(ctx, "ann", ucID, toolDocSend, json.RawMessage(`{"connector_channel_id":"x","doc":"`+in.Ref+`"}`), "call-gone"); code(err) != protocol.CodeInvalidArguments {
		t.Fatalf("removed file: %v", err)
	}
}

func TestToolResultFilesDownloaded(t *testing.T) {
	t.Parallel()
	fc := startFilesConnector(t)
	th, ucID, _ := filesHost(t, fc, "cy", nil)
	ctx := ctxT(t)
	res, err := th.Invoke(ctx, "cy", ucID, toolShot, json.RawMessage(`{"connector_channel_id":"x"}`), "shot-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Files) != 2 || len(res.FileErrors) != 1 {
		t.Fatalf("files %+v, errors %v", res.Files, res.FileErrors)
	}
	// Sorted by member: "extra" (the log) comes before "screenshot".
	shot := res.Files[1]
	b, err := os.ReadFile(shot.Path)
	if err != nil || string(b) != "\x89PNG fake pixels" || shot.Type != protocol.FileImage || shot.MimeType != "image/png" ||
		shot.Filename != "screen.png" || shot.Size != int64(len(b)) || !strings.HasPrefix(shot.Ref, FileRefPrefix) {
		t.Fatalf("screenshot %+v (%q, %v)", shot, b, err)
	}
	if !strings.Contains(string(res.Output), "download_url") {
		t.Fatalf("Output changed: %s", res.Output)
	}
	// The model's view: the host's refs, no connector ref or URL, errors named.
	var model struct {
		Screenshot map[string]any   `json:"screenshot"`
		Extra      []map[string]any `json:"extra"`
		Device     string           `json:"device"`
	}
	if err := json.Unmarshal(res.ModelOutput, &model); err != nil {
		t.Fatal(err)
	}
	mo := string(res.ModelOutput)
	if strings.Contains(mo, "download_url") || strings.Contains(mo, "/files/refs/") || model.Device != "pixel" ||
		model.Screenshot["file_ref"] != shot.Ref || model.Extra[0]["file_ref"] != res.Files[0].Ref ||
		model.Extra[1]["file_ref"] != nil || !strings.Contains(model.Extra[1]["error"].(string), string(CodeFileDownloadFailed)) {
		t.Fatalf("model output %s", mo)
	}
	// A file from a result is a file of the conversation: it can go to a tool.
	if _, err := th.Invoke(ctx, "cy", ucID, toolDocSend, json.RawMessage(`{"connector_channel_id":"x","doc":"`+res.Files[0].Ref+`"}`), "send-log"); err != nil {
		t.Fatal(err)
	}
	if docs := fc.sentDocs(); len(docs) != 1 || docs[0] != "log.txt:log line" {
		t.Fatalf("connector received %v", docs)
	}
}

// Registered files are bounded in number and bytes, least recently used
// forgotten first, and owned by one user.
func TestFileRegistryBounds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		max       int
		maxBytes  int64
		sizes     []int64
		touch     int   // index looked up before the last add (-1: none)
		wantAlive []int // indexes still resolvable at the end
	}{
		{"count", 2, 1 << 20, []int64{1, 1, 1}, -1, []int{1, 2}},
		{"count, touched survives", 2, 1 << 20, []int64{1, 1, 1}, 0, []int{0, 2}},
		{"bytes", 10, 10, []int64{4, 4, 4}, -1, []int{1, 2}},
		{"one file over the byte bound stays alone", 10, 10, []int64{4, 40}, -1, []int{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newFileRegistry(tt.max, tt.maxBytes)
			var refs []string
			for i, size := range tt.sizes {
				if i == len(tt.sizes)-1 && tt.touch >= 0 {
					r.get("u", refs[tt.touch])
				}
				refs = append(refs, r.add("u", File{Path: "p", Size: size}).Ref)
			}
			for i, ref := range refs {
				_, ok := r.get("u", ref)
				if want := containsInt(tt.wantAlive, i); ok != want {
					t.Errorf("file %d alive = %v, want %v", i, ok, want)
				}
				if _, ok := r.get("other", ref); ok {
					t.Errorf("file %d resolves for another user", i)
				}
			}
		})
	}
	th := newTestHost(t, "", nil)
	p := filepath.Join(t.TempDir(), "photo.jpg")
	if err := os.WriteFile(p, []byte("jpeg"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := th.RegisterFile("dee", OutgoingFile{Path: p})
	if err != nil || f.Filename != "photo.jpg" || f.MimeType != "image/jpeg" || f.Type != protocol.FileImage || f.Size != 4 {
		t.Fatalf("RegisterFile = %+v %v", f, err)
	}
	if got, ok := th.LookupFile("dee", f.Ref); !ok || got.Path != p {
		t.Fatalf("LookupFile = %+v %v", got, ok)
	}
	if _, err := th.RegisterFile("dee", OutgoingFile{Path: filepath.Join(t.TempDir(), "missing")}); err == nil {
		t.Fatal("a missing file was registered")
	}
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestProjectThirdPartyUploadRefs is issue 35 item 6: a Card xconn did not
// write declares its upload references in the spellings a third party
// uses (the spec names no keyword); each is projected as a unified
// file_ref, its format dropped, and the other arguments are kept.
func TestProjectThirdPartyUploadRefs(t *testing.T) {
	tool := &protocol.Tool{ToolID: "thirdparty_send", InputSchema: json.RawMessage(`{"type":"object","required":["connector_channel_id"],"properties":{` +
		`"connector_channel_id":{"type":"string"},"file_ref":{"type":"string","description":"The file."},` +
		`"attachment":{"type":"string","format":"upload-ref"},"legacy":{"type":"string","format":"xagent-upload-ref"},` +
		`"when":{"type":"string","format":"date-time"}}}`)}
	p := projectTool(tool)
	if got := strings.Join(p.fileArgs, ","); got != "attachment,file_ref,legacy" {
		t.Fatalf("file args %q, want attachment,file_ref,legacy", got)
	}
	var schema struct {
		Properties map[string]map[string]string `json:"properties"`
	}
	if err := json.Unmarshal(p.params, &schema); err != nil {
		t.Fatal(err)
	}
	for _, name := range p.fileArgs {
		if prop := schema.Properties[name]; prop["format"] != "" || !strings.HasPrefix(prop["description"], FileRefDescription) {
			t.Errorf("%s projected as %v", name, prop)
		}
	}
	if schema.Properties["when"]["format"] != "date-time" {
		t.Errorf("another argument changed: %v", schema.Properties["when"])
	}
}
