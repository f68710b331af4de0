package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/xconn/xconn/delivery"
)

// TestTwoProcessesNoRaces points two handles (two "processes") at one
// database and races them on read-modify-write operations.
func TestTwoProcessesNoRaces(t *testing.T) {
	backends(t, func(t *testing.T, dsn string) {
		a := openDB(t, dsn, Options{MaxChannels: 5})
		b := openDB(t, dsn, Options{MaxChannels: 5})
		ctx := context.Background()
		now := time.Now()

		var wg sync.WaitGroup
		var mu sync.Mutex
		status := map[delivery.EnqueueStatus]int{}
		limited, created := 0, 0
		for i := range 8 {
			db := a
			if i%2 == 1 {
				db = b
			}
			wg.Add(2)
			go func() {
				defer wg.Done()
				e := delivery.Entry{Queue: "q", Channel: "c", MessageID: "same", Payload: []byte("x"),
					CreatedAt: now, ExpiresAt: now.Add(time.Hour), NextAttempt: now}
				res, err := db.OutboxEnqueue(ctx, e, 10, now)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					t.Error(err)
					return
				}
				status[res.Status]++
			}()
			go func() {
				defer wg.Done()
				err := db.PutChannel(ctx, Channel{CardID: "card", ChannelID: fmt.Sprint("ch", i)})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case errors.Is(err, ErrLimit):
					limited++
				case err != nil:
					t.Error(err)
				default:
					created++
				}
			}()
		}
		wg.Wait()
		if status[delivery.Enqueued] != 1 || status[delivery.AlreadyPending] != 7 {
			t.Errorf("concurrent enqueues of one message: %v, want 1 enqueued and 7 pending", status)
		}
		if created != 5 || limited != 3 {
			t.Errorf("concurrent channel creation: %d created, %d refused; want 5 and 3 (MaxChannels 5)", created, limited)
		}
		list, err := a.ListChannels(ctx, "card", "")
		if err != nil || len(list) != 5 {
			t.Errorf("channels stored: %d %v, want 5", len(list), err)
		}
	})
}
