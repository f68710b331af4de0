package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"

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

	h, err := host.New(host.Options{Store: db, Delivery: db, Agent: host.Echo{}})
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
	_ = h.BindSession(ctx, uc.ID, "session-1")

	defs, _ := h.Tools(ctx, "user-1", "session-1")
	tools, unsupported := host.ExportOpenAI(defs)
	fmt.Println(len(tools), "tools for the model,", len(unsupported), "left out")

	res, err := h.Invoke(ctx, "user-1", "session-1", defs[0].Name, json.RawMessage(`{"text":"hi"}`), "call-1")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(res.Output))
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
