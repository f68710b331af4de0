package testrig

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/xconn/xconn"

// TestInternalHoldsOnlyBuildingBlocks keeps the layer rule of
// ARCHITECTURE.md: a package under internal/ is a building block below the
// SDK and the host, so none of its files (tests included) may import
// connector, host, mcp, conformance or a connector. Rigs that need those
// live in testrig/ or cmd/xconn/internal/.
func TestInternalHoldsOnlyBuildingBlocks(t *testing.T) {
	upper := []string{"connector", "host", "mcp", "conformance", "connectors", "examples", "cmd", "testrig"}
	files := 0
	err := filepath.WalkDir("../internal", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		files++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			for _, u := range upper {
				if p == module+"/"+u || strings.HasPrefix(p, module+"/"+u+"/") {
					t.Errorf("%s imports %s: internal/ holds building blocks only; move the rig to testrig/ or cmd/xconn/internal/", path, p)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 20 {
		t.Fatalf("only %d Go files found under internal/", files)
	}
}
