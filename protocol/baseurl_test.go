package protocol

import "testing"

func TestValidateBaseURL(t *testing.T) {
	tests := []struct {
		raw  string
		want string // the normalised URL; "" means invalid
	}{
		{"https://connector.example.com", "https://connector.example.com"},
		{"http://127.0.0.1:8080/", "http://127.0.0.1:8080"},
		{"https://h.example/prefix/wechat/", "https://h.example/prefix/wechat"},
		{"HTTPS://h.example/p", "https://h.example/p"},
		{"https://[::1]:9000/x//", "https://[::1]:9000/x"},
		{"", ""},
		{"   ", ""},
		{"ftp://h.example", ""},
		{"ws://h.example", ""},
		{"h.example/path", ""},
		{"https://", ""},
		{"https:///path", ""},
		{"https://user:pw@h.example", ""},
		{"https://user@h.example", ""},
		{"https://h.example/?a=1", ""},
		{"https://h.example/?", ""},
		{"https://h.example/#frag", ""},
		{"https://h.example/#", ""},
		{"mailto:a@b", ""},
		{"https://h.example/%zz", ""},
	}
	for _, tc := range tests {
		t.Run(tc.raw, func(t *testing.T) {
			u, vs := ValidateBaseURL(tc.raw)
			if tc.want == "" {
				if len(vs) == 0 || u != nil {
					t.Fatalf("want invalid, got %v, %v", u, vs)
				}
				return
			}
			if len(vs) > 0 || u == nil {
				t.Fatalf("want valid, got %v", vs)
			}
			if u.String() != tc.want {
				t.Fatalf("got %q, want %q", u.String(), tc.want)
			}
			if got := u.JoinPath(PathCard).String(); got != tc.want+PathCard {
				t.Fatalf("join: %q", got)
			}
		})
	}
}
