package connector_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/testrig/sdkfixture"
)

// streamChildEnv makes the test binary run streamChild instead of the
// tests: "<data dir>|<board URL>".
const streamChildEnv = "XCONN_TEST_STREAM_CHILD"

// boardHandler serves b over HTTP for a connector in another process:
// POST /send {"text","key"} answers {"id"}; POST /edit {"id","text"}
// answers 204, or 409 when the message cannot be edited.
func boardHandler(b *board) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /send", func(w http.ResponseWriter, r *http.Request) {
		var in struct{ Text, Key string }
		if json.NewDecoder(r.Body).Decode(&in) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		id, _ := b.send(r.Context(), nil, connector.MessagePart{Key: in.Key}, in.Text)
		_ = json.NewEncoder(w).Encode(map[string]int{"id": id})
	})
	mux.HandleFunc("POST /edit", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			ID   int
			Text string
		}
		if json.NewDecoder(r.Body).Decode(&in) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		if err := b.edit(r.Context(), nil, in.ID, in.Text); err != nil {
			http.Error(w, err.Error(), http.StatusConflict)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
}

// streamChild is the connector of TestEditStreamSurvivesSIGKILL, run in a
// child process: an EditStream over the parent's board, on the SQLite
// store of a data directory, until it is killed.
func streamChild(spec string) int {
	dir, boardURL, _ := strings.Cut(spec, "|")
	post := func(ctx context.Context, path string, in, out any) (int, error) {
		body, _ := json.Marshal(in)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, boardURL+path, bytes.NewReader(body))
		if err != nil {
			return 0, err
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		defer res.Body.Close()
		if out != nil {
			err = json.NewDecoder(res.Body).Decode(out)
		}
		return res.StatusCode, err
	}
	stream, err := connector.NewEditStream(connector.EditStreamOptions[int]{
		Interval: time.Nanosecond,
		Send: func(ctx context.Context, _ *connector.Channel, part connector.MessagePart, text string) (int, error) {
			var out struct{ ID int }
			_, err := post(ctx, "/send", map[string]string{"text": text, "key": part.Key}, &out)
			return out.ID, err
		},
		Edit: func(ctx context.Context, _ *connector.Channel, id int, text string) error {
			code, err := post(ctx, "/edit", map[string]any{"id": id, "text": text}, nil)
			if err == nil && code == http.StatusConflict {
				return connector.ErrNotEditable
			}
			return err
		},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	srv, err := connector.New(connector.Options{DataDir: dir, APIKey: streamKey, Skill: []byte("# Board\n\nTalk on the board.\n"),
		Identity: connector.Identity{CardID: "im.board", Name: "Board", Provider: "board", TargetType: protocol.TargetIM}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	_ = connector.AddForm(srv, "board_login", func(ctx context.Context, ch *connector.Channel, in boardLogin) (connector.Account[boardLogin], error) {
		return connector.Account[boardLogin]{Binding: in, DisplayName: in.Name}, nil
	}, connector.FlowOptions{Default: true})
	srv.OnAssistantDelta(stream.Delta)
	srv.OnAssistantMessage(stream.Final)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("LISTEN http://%s\n", ln.Addr())
	if err := srv.Serve(context.Background(), ln); err != nil { // until SIGKILL
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// child is a running streamChild.
type child struct {
	cmd  *exec.Cmd
	url  string
	logs *sdkfixture.SyncBuffer
}

// startStreamChild runs streamChild on dir and waits for its address.
func startStreamChild(t *testing.T, dir, boardURL string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), streamChildEnv+"="+dir+"|"+boardURL)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, logs: &sdkfixture.SyncBuffer{}}
	cmd.Stderr = c.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.kill)
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if addr, ok := strings.CutPrefix(sc.Text(), "LISTEN "); ok {
				lines <- addr
			}
		}
		close(lines)
	}()
	select {
	case addr, ok := <-lines:
		if !ok {
			t.Fatalf("child exited without serving:\n%s", c.logs.String())
		}
		c.url = addr
	case <-time.After(30 * time.Second):
		t.Fatalf("child did not serve:\n%s", c.logs.String())
	}
	return c
}

// kill sends SIGKILL (no shutdown of any kind) and reaps the process.
func (c *child) kill() {
	if c.cmd.ProcessState != nil {
		return
	}
	_ = c.cmd.Process.Kill()
	_ = c.cmd.Wait()
}

// TestEditStreamSurvivesSIGKILL is the documented way for a streamed
// message across a crash (issue 33, item 1): the connector is killed
// between a delta (its message posted) and the final; the restarted
// process, with nothing in memory, edits the posted message into the
// final through the EditStream's durable record: the target sees one
// message, posted once.
func TestEditStreamSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("runs child processes")
	}
	b := &board{}
	hs := httptest.NewServer(boardHandler(b))
	defer hs.Close()
	dir := t.TempDir()
	ctx := testCtx(t)

	first := startStreamChild(t, dir, hs.URL)
	c, _, err := connectortest.Connect(ctx, first.url, streamKey)
	if err != nil {
		t.Fatal(err)
	}
	ack, err := c.Open(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	ch := ack.ConnectorChannelID
	if st, err := c.SignInForm(ctx, ch, "board_login", map[string]string{"name": "ann"}); err != nil || st.Status != protocol.AuthAuthenticated {
		t.Fatalf("sign-in: %+v %v", st, err)
	}
	for i, part := range []string{"The answer ", "is coming"} {
		env, _ := connectortest.Packet(protocol.TypeChatMessageDelta, ch, protocol.ChatDeltaPayload{MessageID: "k1", Sequence: int64(i + 1), Text: part})
		if err := c.Send(ctx, env); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the streamed message posted and edited", func() bool {
		got := b.live()
		return len(got) == 1 && got[0].Text == "The answer is coming"
	})
	first.kill()
	_ = c.Close()

	second := startStreamChild(t, dir, hs.URL)
	c, _, err = connectortest.Connect(ctx, second.url, streamKey)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Open(ctx, ch); err != nil {
		t.Fatal(err)
	}
	if a := sendChat(t, c, ch, protocol.ChatMessagePayload{MessageID: "k1", Text: "The answer is 42."}); a.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v\n%s", a, second.logs.String())
	}
	got := b.live()
	if sends, _ := b.counts(); len(got) != 1 || got[0].Text != "The answer is 42." || sends != 1 {
		t.Fatalf("after the kill: %d posts, board %+v", sends, got)
	}
}
