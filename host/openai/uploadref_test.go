package openai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/host"
	"github.com/xconn/xconn/host/openai"
	"github.com/xconn/xconn/host/openai/openaitest"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

// docsLogin is the sign-in form of the docs test connector.
type docsLogin struct {
	Name string `json:"name" label:"Name"`
}

type docsBinding struct {
	Name string `json:"name"`
}

// archiveIn takes a file as an upload reference.
type archiveIn struct {
	File  connector.Upload `json:"file" desc:"The file to archive."`
	Title string           `json:"title" desc:"A title for it."`
}

type archiveOut struct {
	Archived int64 `json:"archived_bytes"`
}

// docsConnector is a small IM connector whose tool docs_archive takes an
// upload reference: the web chat has no such tool. It records what the
// tool received and the assistant messages.
type docsConnector struct {
	srv *connector.Server
	url string

	mu       sync.Mutex
	archived [][]byte
	finals   []string
}

func startDocsConnector(t *testing.T) *docsConnector {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	db, err := store.Open(ctx, "sqlite:"+filepath.Join(dir, "docs.db"), store.Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	d := &docsConnector{}
	d.srv, err = connector.New(connector.Options{Store: db, DataDir: filepath.Join(dir, "files"), APIKey: chatAPIKey,
		Skill:    []byte("# Docs\n\nArchive the files the user sends with docs_archive.\n"),
		Identity: connector.Identity{CardID: "im.docs", Name: "Docs", Provider: "docs", TargetType: protocol.TargetIM}})
	if err != nil {
		t.Fatal(err)
	}
	if err := connector.AddForm(d.srv, "docs_login", func(_ context.Context, _ *connector.Channel, in docsLogin) (connector.Account[docsBinding], error) {
		return connector.Account[docsBinding]{Binding: docsBinding(in), DisplayName: in.Name}, nil
	}, connector.FlowOptions{Title: "Sign in", Default: true}); err != nil {
		t.Fatal(err)
	}
	if err := connector.AddTool(d.srv, "docs_archive", func(_ context.Context, _ *connector.Call, in archiveIn) (archiveOut, error) {
		rc, err := in.File.Open()
		if err != nil {
			return archiveOut{}, err
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		if err != nil {
			return archiveOut{}, err
		}
		d.mu.Lock()
		d.archived = append(d.archived, b)
		d.mu.Unlock()
		return archiveOut{Archived: int64(len(b))}, nil
	}, connector.ToolOptions{Title: "Archive a file", Description: "Archive a file of the conversation.", SideEffect: true}); err != nil {
		t.Fatal(err)
	}
	d.srv.OnAssistantMessage(func(_ context.Context, _ *connector.Channel, m *connector.AssistantMessage) error {
		d.mu.Lock()
		d.finals = append(d.finals, m.Text)
		d.mu.Unlock()
		return nil
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d.url = "http://" + ln.Addr().String()
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- d.srv.Serve(sctx, ln) }()
	t.Cleanup(func() {
		stop()
		if err := <-served; err != nil {
			t.Errorf("docs connector: %v", err)
		}
	})
	return d
}

func (d *docsConnector) waitFinals(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		d.mu.Lock()
		got := append([]string(nil), d.finals...)
		d.mu.Unlock()
		if len(got) >= n {
			return got
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("fewer than %d assistant messages", n)
	return nil
}

var fileRefNote = regexp.MustCompile(`file_ref (` + host.FileRefPrefix + `[A-Za-z0-9_-]+)`)

// An upload-reference argument: the model sees the tool's file argument
// as a file_ref of the conversation, names the image the user sent, and
// the tool receives that file, uploaded by the host to its connector.
func TestUploadReferenceArgument(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	docs := startDocsConnector(t)
	model := openaitest.NewServer(openaitest.Options{})
	defer model.Close()
	dir := t.TempDir()
	hdb, err := store.Open(ctx, "sqlite:"+filepath.Join(dir, "host.db"), store.Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer hdb.Close()
	agent, err := openai.New(openai.Options{Model: "fake-model", BaseURL: model.URL})
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.New(host.Options{Store: hdb, Delivery: hdb, Agent: agent, FilesDir: filepath.Join(dir, "files")})
	if err != nil {
		t.Fatal(err)
	}
	agent.Bind(h, hdb)
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer ccancel()
		h.Close(cctx)
	}()
	if _, err := h.Admit(ctx, docs.url, chatAPIKey); err != nil {
		t.Fatalf("admit: %v", err)
	}
	si, err := h.Connect(ctx, "fay", "im.docs", "docs_login", map[string]string{"name": "Fay"})
	if err != nil {
		t.Fatal(err)
	}
	uc, err := si.Wait(ctx)
	if err != nil {
		t.Fatalf("sign-in: %v", err)
	}

	img := testPNG()
	var seenRef string
	model.EnqueueFunc(func(req openaitest.Request) openaitest.Response {
		ms := req.Body.Messages
		m := fileRefNote.FindStringSubmatch(ms[len(ms)-1].Text())
		if m == nil {
			return openaitest.Text("no file_ref in the user message")
		}
		seenRef = m[1]
		args, _ := json.Marshal(map[string]string{"connector_channel_id": uc.ChannelID, "file": m[1], "title": "scan"})
		return openaitest.Calls("Archiving it.", openaitest.ToolCall{ID: "call_archive", Name: "docs_archive", Arguments: string(args)})
	})
	model.Enqueue(openaitest.Text("Archived."))

	ch, err := docs.srv.Channel(uc.ChannelID)
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.Publish(ctx, connector.UserMessage{Text: "please archive this scan",
		Files: []connector.OutgoingFile{{Name: "scan.png", MimeType: "image/png", Content: bytes.NewReader(img)}}}); err != nil {
		t.Fatalf("publish: %v", err)
	}
	finals := docs.waitFinals(t, 2)
	if finals[0] != "Archiving it." || finals[1] != "Archived." {
		t.Fatalf("assistant messages %q", finals)
	}
	docs.mu.Lock()
	archived := docs.archived
	docs.mu.Unlock()
	if len(archived) != 1 || !bytes.Equal(archived[0], img) {
		t.Fatalf("the tool got %d files", len(archived))
	}

	reqs := model.Requests()
	// The tool was offered with its file argument projected as a file_ref.
	var params string
	for _, tl := range reqs[0].Body.Tools {
		if tl.Function.Name == "docs_archive" {
			params = string(tl.Function.Parameters)
		}
	}
	if !strings.Contains(params, `"file"`) || !strings.Contains(params, "file_ref") || strings.Contains(params, `"format"`) {
		t.Fatalf("docs_archive parameters: %s", params)
	}
	// The image went to the model as image input, the reference as text.
	ms := reqs[0].Body.Messages
	if len(ms[len(ms)-1].ImageURLs()) != 1 || seenRef == "" {
		t.Fatalf("user message %q", ms[len(ms)-1].Text())
	}
	// The result fed back, and nothing of the connector's own references.
	ms = reqs[1].Body.Messages
	res := ms[len(ms)-1]
	if res.ToolCallID != "call_archive" || !strings.Contains(res.Text(), `"archived_bytes":`) {
		t.Fatalf("tool result %q", res.Text())
	}
}
