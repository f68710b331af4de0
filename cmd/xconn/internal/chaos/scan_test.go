package chaos

import (
	"strings"
	"testing"
)

func TestScannerFindsSplitCanaries(t *testing.T) {
	const key = "chaosKEY0123456789abcdef"
	tests := []struct {
		name   string
		chunks []string
		want   int
	}{
		{"absent", []string{"hello ", "world"}, 0},
		{"whole", []string{"x " + key + " y"}, 1},
		{"split in two", []string{"Bearer chaosKEY01", "23456789abcdef\r\n"}, 1},
		{"split byte by byte", strings.Split(key, ""), 1},
		{"prefix only", []string{"chaosKEY0123456789abcde", "X"}, 0},
		{"twice is one report", []string{key, key}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewScanner(map[string]string{"api_key": key, "empty": ""})
			st := s.Stream("test")
			for _, c := range tt.chunks {
				if n, err := st.Write([]byte(c)); n != len(c) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			got := s.Leaks()
			if len(got) != tt.want {
				t.Fatalf("leaks %v, want %d", got, tt.want)
			}
			for _, l := range got {
				if l.Canary != "api_key" || l.Where != "test" || strings.Contains(l.Where+l.Canary, key) {
					t.Fatalf("leak %+v", l)
				}
			}
		})
	}
}

func TestScannerStreamsAreSeparate(t *testing.T) {
	s := NewScanner(map[string]string{"code": "SECRETCODE"})
	a, b := s.Stream("a"), s.Stream("b")
	a.Write([]byte("SECRET"))
	b.Write([]byte("CODE")) // the halves are in different streams
	if l := s.Leaks(); len(l) != 0 {
		t.Fatalf("leaks %v", l)
	}
	s.Scan("body", []byte("xxSECRETCODExx"))
	if l := s.Leaks(); len(l) != 1 || l[0].Where != "body" {
		t.Fatalf("leaks %v", l)
	}
}
