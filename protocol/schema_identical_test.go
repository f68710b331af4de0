package protocol

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// The embedded schemas must stay byte-identical to the official ones. The
// official copies live in ../shared/schemas beside the repository in the
// project's workspace and in CI.
func TestEmbeddedSchemasAreOfficial(t *testing.T) {
	official := filepath.Join("..", "..", "shared", "schemas")
	entries, err := os.ReadDir(official)
	if err != nil {
		t.Skipf("official schemas not found at %s: %v", official, err)
	}
	n := 0
	for _, e := range entries {
		want, err := os.ReadFile(filepath.Join(official, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join("schemas", e.Name()))
		if err != nil {
			t.Errorf("%s: not embedded: %v", e.Name(), err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the official schema", e.Name())
		}
		n++
	}
	if n != 3 {
		t.Errorf("compared %d schemas, want 3", n)
	}
}
