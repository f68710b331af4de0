package connector_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/xconn/xconn/connector"
)

// A target client turns its API's "slow down" into a *RateLimitError; a
// RateLimit waits it out (within a cap) and calls again.
func ExampleRateLimit() {
	calls := 0
	sendMessage := func(ctx context.Context) error { // one target API call
		calls++
		if calls == 1 { // the target answers 429 with Retry-After: 0.05
			h := http.Header{"Retry-After": {"0.05"}}
			wait, _ := connector.RetryAfterHeader(h, time.Now())
			return &connector.RateLimitError{RetryAfter: wait, Err: errors.New("429 Too Many Requests")}
		}
		return nil
	}
	err := connector.RateLimit{MaxWait: 10 * time.Second}.Do(context.Background(), sendMessage)
	fmt.Println(err, calls)

	// A hint longer than MaxWait is not waited: the error says "retryable".
	long := &connector.RateLimitError{RetryAfter: time.Minute, Err: errors.New("429 Too Many Requests")}
	err = connector.RateLimit{MaxWait: 10 * time.Second}.Do(context.Background(), func(context.Context) error { return long })
	fmt.Println(err, connector.IsTemporary(err))
	// Output:
	// <nil> 2
	// 429 Too Many Requests (retry after 1m0s) true
}
