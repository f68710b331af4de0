package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

var ts0 = time.Unix(1_800_000_000, 5)

func TestInstances(t *testing.T) {
	eachDB(t, Options{MaxInstances: 2}, func(t *testing.T, db *DB) {
		ctx := context.Background()
		if err := db.PutInstance(ctx, Instance{CardID: "im.x", ConnectorID: "c1", CreatedAt: ts0}); err != nil {
			t.Fatal(err)
		}
		if err := db.PutInstance(ctx, Instance{CardID: "im.x", ConnectorID: "c1", GraceUntil: ts0.Add(time.Minute)}); err != nil {
			t.Fatal(err)
		}
		in, err := db.GetInstance(ctx, "im.x", "c1")
		if err != nil || !in.CreatedAt.Equal(ts0) || !in.GraceUntil.Equal(ts0.Add(time.Minute)) {
			t.Fatalf("GetInstance = %+v %v", in, err)
		}
		if err := db.PutInstance(ctx, Instance{CardID: "im.x", ConnectorID: "c2", CreatedAt: ts0.Add(1)}); err != nil {
			t.Fatal(err)
		}
		if err := db.PutInstance(ctx, Instance{CardID: "im.x", ConnectorID: "c3"}); !errors.Is(err, ErrLimit) {
			t.Fatalf("third instance: %v, want ErrLimit", err)
		}
		list, err := db.ListInstances(ctx, "im.x")
		if err != nil || len(list) != 2 || list[0].ConnectorID != "c1" {
			t.Fatalf("ListInstances = %+v %v", list, err)
		}
		if err := db.DeleteInstance(ctx, "im.x", "c1"); err != nil {
			t.Fatal(err)
		}
		if _, err := db.GetInstance(ctx, "im.x", "c1"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("after delete: %v", err)
		}
	})
}

func TestChannels(t *testing.T) {
	eachDB(t, Options{MaxChannels: 3}, func(t *testing.T, db *DB) {
		ctx := context.Background()
		for i := range 3 {
			ch := Channel{CardID: "im.x", ChannelID: fmt.Sprint("ch", i), ConnectorID: fmt.Sprint("c", i%2), Status: "authenticated",
				Binding: []byte(fmt.Sprint("token-", i)), CreatedAt: ts0.Add(time.Duration(i))}
			if err := db.PutChannel(ctx, ch); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.PutChannel(ctx, Channel{CardID: "im.x", ChannelID: "ch9"}); !errors.Is(err, ErrLimit) {
			t.Fatalf("4th channel: %v, want ErrLimit", err)
		}
		if err := db.PutChannel(ctx, Channel{CardID: "other", ChannelID: "ch9"}); err != nil {
			t.Fatalf("the bound is per card: %v", err)
		}
		// Update keeps CreatedAt and replaces the binding.
		if err := db.PutChannel(ctx, Channel{CardID: "im.x", ChannelID: "ch0", ConnectorID: "c0", Status: "expired", Binding: nil}); err != nil {
			t.Fatal(err)
		}
		ch, err := db.GetChannel(ctx, "im.x", "ch0")
		if err != nil || ch.Status != "expired" || ch.Binding != nil || !ch.CreatedAt.Equal(ts0) {
			t.Fatalf("GetChannel = %+v %v", ch, err)
		}
		ch, _ = db.GetChannel(ctx, "im.x", "ch1")
		if string(ch.Binding) != "token-1" {
			t.Fatalf("binding = %q", ch.Binding)
		}
		all, _ := db.ListChannels(ctx, "im.x", "")
		mine, _ := db.ListChannels(ctx, "im.x", "c0")
		if len(all) != 3 || len(mine) != 2 || mine[0].ChannelID != "ch0" || mine[1].ChannelID != "ch2" {
			t.Fatalf("ListChannels: all %d, c0 %+v", len(all), mine)
		}
		// DeleteChannel removes dependent records.
		must0(t, db.PutAuthSession(ctx, AuthSession{CardID: "im.x", ID: "s1", ChannelID: "ch1", ExpiresAt: ts0.Add(time.Hour)}))
		must0(t, db.PutToolCall(ctx, ToolCall{CardID: "im.x", ChannelID: "ch1", ToolCallID: "t1", CreatedAt: time.Now()}))
		must0(t, db.PutFile(ctx, File{CardID: "im.x", Ref: "f1", ChannelID: "ch1"}))
		must0(t, db.DeleteChannel(ctx, "im.x", "ch1"))
		for what, err := range map[string]error{
			"channel":  second(db.GetChannel(ctx, "im.x", "ch1")),
			"session":  second(db.GetAuthSession(ctx, "im.x", "s1")),
			"toolcall": second(db.GetToolCall(ctx, "im.x", "ch1", "t1")),
			"file":     second(db.GetFile(ctx, "im.x", "f1")),
		} {
			if !errors.Is(err, ErrNotFound) {
				t.Errorf("%s after DeleteChannel: %v", what, err)
			}
		}
	})
}

func must0(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func second[T any](_ T, err error) error { return err }

func TestAuthSessions(t *testing.T) {
	backends(t, func(t *testing.T, dsn string) {
		now := ts0
		db := openDB(t, dsn, Options{MaxAuthSessions: 2, Now: func() time.Time { return now }})
		ctx := context.Background()
		must0(t, db.PutAuthSession(ctx, AuthSession{CardID: "c", ID: "s1", FlowID: "qr", Status: "pending", ExpiresAt: ts0.Add(time.Minute), State: []byte("qr-token")}))
		must0(t, db.PutAuthSession(ctx, AuthSession{CardID: "c", ID: "s2", ExpiresAt: ts0.Add(time.Hour)}))
		if err := db.PutAuthSession(ctx, AuthSession{CardID: "c", ID: "s3", ExpiresAt: ts0.Add(time.Hour)}); !errors.Is(err, ErrLimit) {
			t.Fatalf("3rd session: %v, want ErrLimit", err)
		}
		s, err := db.GetAuthSession(ctx, "c", "s1")
		if err != nil || string(s.State) != "qr-token" || s.FlowID != "qr" || !s.ExpiresAt.Equal(ts0.Add(time.Minute)) {
			t.Fatalf("GetAuthSession = %+v %v", s, err)
		}
		now = ts0.Add(2 * time.Minute) // s1 expired: room for a new one
		must0(t, db.PutAuthSession(ctx, AuthSession{CardID: "c", ID: "s3", ExpiresAt: ts0.Add(time.Hour)}))
		n, err := db.DeleteExpiredAuthSessions(ctx, "c", ts0.Add(2*time.Hour))
		if err != nil || n != 2 {
			t.Fatalf("DeleteExpiredAuthSessions = %d %v", n, err)
		}
		must0(t, db.DeleteAuthSession(ctx, "c", "nope"))
	})
}

func TestToolCalls(t *testing.T) {
	backends(t, func(t *testing.T, dsn string) {
		now := ts0
		db := openDB(t, dsn, Options{MaxToolCalls: 3, ToolCallAge: time.Hour, Now: func() time.Time { return now }})
		ctx := context.Background()
		tc := ToolCall{CardID: "c", ChannelID: "ch", ToolCallID: "t0", ToolID: "send", ArgsHash: "h", Result: []byte(`{"ok":true}`)}
		must0(t, db.PutToolCall(ctx, tc))
		if err := db.PutToolCall(ctx, tc); !errors.Is(err, ErrConflict) {
			t.Fatalf("second record: %v, want ErrConflict", err)
		}
		got, err := db.GetToolCall(ctx, "c", "ch", "t0")
		if err != nil || string(got.Result) != `{"ok":true}` || got.ArgsHash != "h" || !got.CreatedAt.Equal(ts0) {
			t.Fatalf("GetToolCall = %+v %v", got, err)
		}
		for i := 1; i <= 3; i++ {
			now = ts0.Add(time.Duration(i) * time.Second)
			must0(t, db.PutToolCall(ctx, ToolCall{CardID: "c", ChannelID: "ch", ToolCallID: fmt.Sprint("t", i), ErrCode: "tool_timeout"}))
		}
		if _, err := db.GetToolCall(ctx, "c", "ch", "t0"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("oldest record beyond MaxToolCalls kept: %v", err)
		}
		n, err := db.PruneToolCalls(ctx, "c", ts0.Add(3*time.Second), 10)
		if err != nil || n != 2 {
			t.Fatalf("PruneToolCalls by age = %d %v, want 2", n, err)
		}
		now = ts0.Add(2 * time.Hour)
		must0(t, db.PutToolCall(ctx, ToolCall{CardID: "c", ChannelID: "ch", ToolCallID: "late"}))
		if _, err := db.GetToolCall(ctx, "c", "ch", "t3"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("record older than ToolCallAge kept: %v", err)
		}
	})
}

func TestFiles(t *testing.T) {
	eachDB(t, Options{MaxFiles: 3}, func(t *testing.T, db *DB) {
		ctx := context.Background()
		for i := range 3 {
			f := File{CardID: "c", Ref: fmt.Sprint("f", i), ChannelID: "ch", Direction: "upload", Path: "/data/f", Filename: "a.pdf",
				MimeType: "application/pdf", FileType: "file", Size: int64(i), ExpiresAt: ts0.Add(time.Duration(i) * time.Minute)}
			must0(t, db.PutFile(ctx, f))
		}
		if err := db.PutFile(ctx, File{CardID: "c", Ref: "f9"}); !errors.Is(err, ErrLimit) {
			t.Fatalf("4th file: %v, want ErrLimit", err)
		}
		got, err := db.GetFile(ctx, "c", "f2")
		if err != nil || got.Size != 2 || got.MimeType != "application/pdf" || !got.ExpiresAt.Equal(ts0.Add(2*time.Minute)) {
			t.Fatalf("GetFile = %+v %v", got, err)
		}
		exp, err := db.ExpiredFiles(ctx, "c", ts0.Add(90*time.Second), 10)
		if err != nil || len(exp) != 2 || exp[0].Ref != "f0" {
			t.Fatalf("ExpiredFiles = %+v %v", exp, err)
		}
		if exp, _ := db.ExpiredFiles(ctx, "c", ts0.Add(time.Hour), 1); len(exp) != 1 {
			t.Fatalf("ExpiredFiles limit 1 returned %d", len(exp))
		}
		must0(t, db.DeleteFile(ctx, "c", "f0"))
		if _, err := db.GetFile(ctx, "c", "f0"); !errors.Is(err, ErrNotFound) {
			t.Fatal(err)
		}
	})
}
