package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/host"
	"github.com/xconn/xconn/store"
)

// Embedding the host in an agent platform: a store, an Agent, then
// admission, sign-in, tools and invocation. (Not run: it needs a live
// Connector Server.)
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "host-example")
	defer os.RemoveAll(dir)
	db, err := store.Open(ctx, "sqlite:"+filepath.Join(dir, "host.db"), store.Options{DataDir: dir})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	// Logs go through the SDK's public redaction; the host hands it the
	// API keys and secret form input it sees.
	secrets := connector.NewRedactor(0)
	logger := slog.New(connector.NewRedactingHandler(slog.NewTextHandler(os.Stderr, nil), secrets))
	h, err := host.New(host.Options{Store: db, Delivery: db, Agent: host.Echo{}, Logger: logger, OnSecret: secrets.Add})
	if err != nil {
		log.Fatal(err)
	}
	if err := h.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer h.Close(ctx)

	c, err := h.Admit(ctx, "http://127.0.0.1:8080", os.Getenv("XCONN_API_KEY"))
	if err != nil {
		log.Fatal(err) // an *host.AdmissionError says why
	}
	signin, err := h.Connect(ctx, "user-1", c.CardID, "", map[string]string{"room": "lobby"})
	if err != nil {
		log.Fatal(err)
	}
	uc, err := signin.Wait(ctx)
	if err != nil {
		log.Fatal(err)
	}
	// The channel's dedicated session (section 6.3) is uc.SessionID, the
	// one its messages carry (UserMessage.SessionID): tool calls of that
	// conversation run on this channel.
	defs, _ := h.Tools(ctx, "user-1", uc.SessionID) // the Card's tools and the built-in channel tools
	tools, unsupported := host.ExportOpenAI(defs)
	fmt.Println(len(tools), "tools for the model,", len(unsupported), "left out")

	res, err := h.Invoke(ctx, "user-1", uc.SessionID, defs[0].Name, json.RawMessage(`{"text":"hi"}`), "call-1")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(res.ModelOutput)) // the result with the host's file_refs
	for _, f := range res.Files {
		fmt.Println(f.Ref, f.Filename, f.MimeType, f.Size) // downloaded into FilesDir
	}
}

// Exporting projected tools to the OpenAI and Anthropic formats: tool ids
// the providers reject are reported, never renamed.
func ExampleExportOpenAI() {
	defs := []host.FunctionDef{
		{Name: "webchat_message_send", Description: "Send a message.", Parameters: json.RawMessage(`{"type":"object"}`)},
		{Name: "im.wechat.send", Description: "Has periods.", Parameters: json.RawMessage(`{"type":"object"}`)},
	}
	openai, bad := host.ExportOpenAI(defs)
	b, _ := json.Marshal(openai)
	fmt.Println(string(b))
	fmt.Println(bad[0].ToolID, "unsupported")
	anthropic, _ := host.ExportAnthropic(defs)
	b, _ = json.Marshal(anthropic)
	fmt.Println(string(b))
	// Output:
	// [{"type":"function","function":{"name":"webchat_message_send","description":"Send a message.","parameters":{"type":"object"}}}]
	// im.wechat.send unsupported
	// [{"name":"webchat_message_send","description":"Send a message.","input_schema":{"type":"object"}}]
}
