package main

import (
	"context"
	"net/http"
	"net/http/cookiejar"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/xconn/xconn/host/openai/openaitest"
)

// Issue 28's first report, as a new user meets it: "xconn demo --agent
// openai" with a model that calls webchat_message_send the way a model
// naturally does, {"text":"proactive ping"}, with no channel argument. The
// call succeeds (the host fills in the conversation's channel) and the
// model gets the message's id back, not invalid_arguments.
func TestDemoAgentOpenAIToolWithoutChannel(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	t.Setenv("OPENAI_API_KEY", "")
	model := openaitest.NewServer(openaitest.Options{Models: []string{"llama3.2"}})
	defer model.Close()
	model.Enqueue(
		openaitest.Calls("", openaitest.ToolCall{ID: "call_ping", Name: "webchat_message_send", Arguments: `{"text":"proactive ping"}`}),
		openaitest.Text("Pinged you."))
	addr, dir := freeAddr(t), t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	out, errOut := &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"demo", "--log", "pretty", "--listen", addr, "--data", dir, "--agent", "openai", "--base-url", model.URL, "--model", "llama3.2"},
			strings.NewReader(""), out, errOut)
	}()
	defer func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("exit %d; stderr:\n%s", code, errOut.String())
			}
		case <-time.After(30 * time.Second):
			t.Error("demo did not stop")
		}
	}()
	loginURL := waitFor(t, out, regexp.MustCompile(`(?m)^Login URL: (\S+)$`), 60*time.Second)
	jar, _ := cookiejar.New(nil)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Jar: jar, Transport: tr, Timeout: 10 * time.Second}
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		req, _ := http.NewRequest(method, loginURL, nil)
		req.Header.Set("Origin", "http://"+addr)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s login URL: %s", method, resp.Status)
		}
	}
	waitFor(t, out, regexp.MustCompile(`Signed in: channel (\S+)\.`), 30*time.Second)
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/webchat/api/messages", strings.NewReader(`{"text":"ping me later"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "http://"+addr)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST message: %s", resp.Status)
	}
	waitFor(t, out, regexp.MustCompile(`host → connector\s+chat\.message\s+\S+ assistant message \S+ "Pinged you\."`), 30*time.Second)
	reqs := model.WaitRequests(2, 10*time.Second)
	if len(reqs) != 2 {
		t.Fatalf("model requests: %d, want 2", len(reqs))
	}
	ms := reqs[1].Body.Messages
	res := ms[len(ms)-1]
	if res.Role != "tool" || res.ToolCallID != "call_ping" || !strings.Contains(res.Text(), "message_id") || strings.Contains(res.Text(), "error") {
		t.Fatalf("the model got back %s %s", res.Role, res.Text())
	}
}
