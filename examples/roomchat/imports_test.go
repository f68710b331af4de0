package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestNoInternalImports: connectors and examples are built the way an
// author outside this module builds one, so none of their files (tests
// included) may import a package under internal/, which Go would refuse
// to such an author.
func TestNoInternalImports(t *testing.T) {
	const internal = "github.com/xconn/xconn/internal"
	files := 0
	for _, root := range []string{"../../connectors", "../../examples"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
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
				if p == internal || strings.HasPrefix(p, internal+"/") {
					t.Errorf("%s imports %s", path, p)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if files < 50 {
		t.Fatalf("only %d Go files found under connectors/ and examples/", files)
	}
}
