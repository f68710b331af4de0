package connector

import (
	"bytes"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/xconn/xconn/internal/chunkcopy"
)

// TestFileReaderWriteTo checks that File.Open's reader copies the whole
// file into every kind of writer (ReaderFrom or not, io.Discard, a file, a
// socket) and still seeks.
func TestFileReaderWriteTo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := bytes.Repeat([]byte("0123456789"), (2*chunkcopy.Large)/10+7)
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	open := func(t *testing.T) fileReader {
		t.Helper()
		r, err := (&File{Ref: "file_x", path: path}).Open()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		fr, ok := r.(fileReader)
		if !ok {
			t.Fatalf("Open returned %T", r)
		}
		return fr
	}
	type plainWriter struct{ io.Writer } // hides bytes.Buffer's ReaderFrom

	var buf bytes.Buffer
	if n, err := open(t).WriteTo(plainWriter{&buf}); err != nil || n != int64(len(data)) || !bytes.Equal(buf.Bytes(), data) {
		t.Errorf("plain writer: %d %v", n, err)
	}
	buf.Reset()
	if n, err := io.Copy(&buf, open(t)); err != nil || n != int64(len(data)) || !bytes.Equal(buf.Bytes(), data) {
		t.Errorf("ReaderFrom writer: %d %v", n, err)
	}
	if n, err := io.Copy(io.Discard, open(t)); err != nil || n != int64(len(data)) {
		t.Errorf("io.Discard: %d %v", n, err)
	}
	dst, err := os.Create(filepath.Join(dir, "copy"))
	if err != nil {
		t.Fatal(err)
	}
	if n, err := io.Copy(dst, open(t)); err != nil || n != int64(len(data)) {
		t.Errorf("file: %d %v", n, err)
	}
	dst.Close()
	if got, _ := os.ReadFile(dst.Name()); !bytes.Equal(got, data) {
		t.Error("file: wrong bytes")
	}
	// A socket (sendfile).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		got <- b
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if n, err := io.Copy(c, open(t)); err != nil || n != int64(len(data)) {
		t.Errorf("socket: %d %v", n, err)
	}
	c.Close()
	if b := <-got; !bytes.Equal(b, data) {
		t.Errorf("socket: received %d bytes", len(b))
	}
	// Seeking still works, and WriteTo copies from the offset.
	r := open(t)
	if _, err := r.Seek(int64(len(data)-5), io.SeekStart); err != nil {
		t.Fatal(err)
	}
	buf.Reset()
	if _, err := io.Copy(&buf, r); err != nil || buf.String() != string(data[len(data)-5:]) {
		t.Errorf("after seek: %q %v", buf.String(), err)
	}
}
