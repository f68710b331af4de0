package health_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"

	"github.com/xconn/xconn/internal/health"
)

// A standby replica: the store answers, the active lease is another
// process's, so /readyz says why it is not ready.
func Example() {
	reg := health.New()
	reg.Add("store", func(ctx context.Context) error { return nil }) // a store ping in a program
	reg.Set("lease", errors.New("standby: lease held by host-a/4242/k7"))

	srv := httptest.NewServer(reg.Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/readyz")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode)
	fmt.Print(string(body))

	reg.Set("lease", nil) // the lease is now held: ready
	fmt.Println(reg.Ready(context.Background()).Reason())
	// Output:
	// 503
	// standby: lease held by host-a/4242/k7
	// [+] store
	// [-] lease: standby: lease held by host-a/4242/k7
	// ready
}
