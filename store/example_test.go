package store_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/xconn/xconn/store"
)

func ExampleOpen() {
	dir, err := os.MkdirTemp("", "xconn-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	// The key file dir/secret.key is created (mode 0600) on first use.
	db, err := store.Open(ctx, "sqlite:"+filepath.Join(dir, "xconn.db"), store.Options{DataDir: dir})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	err = db.PutChannel(ctx, store.Channel{CardID: "im.webchat", ChannelID: "cch_1", Status: "authenticated", Binding: []byte("room-token")})
	if err != nil {
		fmt.Println(err)
		return
	}
	ch, _ := db.GetChannel(ctx, "im.webchat", "cch_1")
	fmt.Println(ch.Status, string(ch.Binding), db.Dialect())
	// Output: authenticated room-token sqlite
}
