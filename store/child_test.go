package store

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/xconn/xconn/delivery"
	"github.com/xconn/xconn/protocol"
)

// The SIGKILL test re-executes the test binary as a child process that
// owns an outbox on a SQLite file; the parent kills it between enqueue and
// ack, restarts the outbox on the same file and checks exactly-once
// delivery with the original expiry.

const (
	childEnv    = "XCONN_STORE_CHILD" // "idle" or "run"
	childDSN    = "XCONN_STORE_CHILD_DSN"
	childTarget = "XCONN_STORE_CHILD_URL"
	killQueue   = "connector"
)

// httpSend posts the entry to the receiver and maps its answer (a
// chat.message.ack payload) with delivery.AckResult.
func httpSend(url string) delivery.SendFunc {
	return func(ctx context.Context, e delivery.Entry) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(e.Payload))
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("send: %w", err)
		}
		defer resp.Body.Close()
		var ack protocol.ChatAckPayload
		if err := json.NewDecoder(resp.Body).Decode(&ack); err != nil {
			return fmt.Errorf("read ack: %w", err)
		}
		return delivery.AckResult(ack)
	}
}

// runChild is the child process: it enqueues one message, prints its
// expiry, then idles or runs the outbox until it is killed.
func runChild() int {
	ctx := context.Background()
	db, err := Open(ctx, os.Getenv(childDSN), Options{Key: testKey})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ob, err := delivery.NewOutbox(delivery.OutboxOptions{Storage: db, Queue: killQueue, Send: httpSend(os.Getenv(childTarget))})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	payload, _ := json.Marshal(protocol.ChatMessagePayload{MessageID: "m1", Text: "hello"})
	res, err := ob.Enqueue(ctx, "cch_1", "m1", payload)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Printf("ENQUEUED %d\n", res.Entry.ExpiresAt.UnixNano())
	if os.Getenv(childEnv) == "run" {
		ob.Run(ctx) // until SIGKILL
	}
	select {} // until SIGKILL
}

// receiver is the receiving side: an inbox, a side-effect counter, and an
// ack that is held back (never sent) the first time.
type receiver struct {
	inbox    *delivery.Inbox
	mu       sync.Mutex
	effects  map[string]int
	requests int
	held     chan struct{} // closed when the first request is held
	holdOnce sync.Once
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var p protocol.ChatMessagePayload
	if err := json.NewDecoder(r.Body).Decode(&p); err != nil {
		http.Error(w, "bad", http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	rc.requests++
	rc.mu.Unlock()
	ctx := r.Context()
	c := delivery.ContentOf(&p)
	v, err := rc.inbox.Begin(ctx, "cch_1", p.MessageID, c)
	if err == nil && v == delivery.VerdictNew {
		rc.mu.Lock()
		rc.effects[p.MessageID]++ // the side effect
		rc.mu.Unlock()
		v, err = rc.inbox.Commit(ctx, "cch_1", p.MessageID, c)
	}
	ack := v.Ack(p.MessageID)
	if err != nil {
		ack = delivery.RejectAck(p.MessageID, err)
	}
	first := false
	rc.holdOnce.Do(func() { first = true })
	if first { // the ack is lost: the sender dies before it arrives
		close(rc.held)
		<-ctx.Done()
		return
	}
	json.NewEncoder(w).Encode(ack)
}

func TestOutboxSurvivesSIGKILL(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"idle", "run"} {
		t.Run("killed_"+map[string]string{"idle": "after_enqueue", "run": "before_ack"}[mode], func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			inbox, _ := delivery.NewInbox(delivery.InboxOptions{Storage: delivery.NewMemoryStorage(0)})
			rc := &receiver{inbox: inbox, effects: map[string]int{}, held: make(chan struct{})}
			if mode == "idle" {
				rc.holdOnce.Do(func() {}) // nothing is sent before the kill
			}
			srv := httptest.NewServer(rc)
			defer srv.Close()

			dsn := "sqlite:" + filepath.Join(t.TempDir(), "kill.db")
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), childEnv+"="+mode, childDSN+"="+dsn, childTarget+"="+srv.URL)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(out).ReadString('\n')
			if err != nil || !strings.HasPrefix(line, "ENQUEUED ") {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("child said %q: %v", line, err)
			}
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimPrefix(line, "ENQUEUED ")), 10, 64)
			expires := time.Unix(0, n)
			if mode == "run" {
				select {
				case <-rc.held:
				case <-time.After(20 * time.Second):
					t.Error("the child never delivered")
				}
			}
			cmd.Process.Signal(syscall.SIGKILL)
			if err := cmd.Wait(); err == nil {
				t.Fatal("child exited cleanly, want killed")
			}

			// Restart on the same file.
			db := openDB(t, dsn, Options{Key: testKey})
			due, err := db.OutboxDue(ctx, killQueue, time.Now().Add(time.Hour), 10)
			if err != nil || len(due) != 1 || !due[0].ExpiresAt.Equal(expires) {
				t.Fatalf("after the kill: pending %+v %v, want m1 with expiry %v", due, err, expires)
			}
			outcomes := make(chan delivery.Outcome, 4)
			ob, err := delivery.NewOutbox(delivery.OutboxOptions{Storage: db, Queue: killQueue, Send: httpSend(srv.URL),
				OnOutcome: func(o delivery.Outcome) { outcomes <- o }})
			if err != nil {
				t.Fatal(err)
			}
			// Enqueueing again after the restart does not extend the expiry.
			if res, err := ob.Enqueue(ctx, "cch_1", "m1", []byte(`{}`)); err != nil || res.Status != delivery.AlreadyPending || !res.Entry.ExpiresAt.Equal(expires) {
				t.Fatalf("re-enqueue after restart = %+v %v", res, err)
			}
			rctx, cancel := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() { ob.Run(rctx); close(done) }()
			var o delivery.Outcome
			select {
			case o = <-outcomes:
			case <-time.After(20 * time.Second):
				t.Error("no outcome after restart")
			}
			cancel()
			<-done
			if o.Kind != delivery.OutcomeDelivered || o.MessageID != "m1" || !o.ExpiresAt.Equal(expires) {
				t.Fatalf("outcome = %+v, want m1 delivered with expiry %v", o, expires)
			}
			rc.mu.Lock()
			defer rc.mu.Unlock()
			if rc.effects["m1"] != 1 {
				t.Fatalf("side effects = %d, want exactly 1", rc.effects["m1"])
			}
			wantReq := map[string]int{"idle": 1, "run": 2}[mode]
			if rc.requests != wantReq {
				t.Fatalf("receiver saw %d deliveries, want %d", rc.requests, wantReq)
			}
		})
	}
}
