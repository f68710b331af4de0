package protocol

import "testing"

func TestParseVersion(t *testing.T) {
	tests := []struct {
		in      string
		want    Version
		wantErr bool
	}{
		{"3.0", Version{3, 0}, false},
		{"3.10", Version{3, 10}, false},
		{"3", Version{3, 0}, false},
		{"", Version{1, 0}, false}, // a missing version parses as 1.0
		{" 2.1 ", Version{2, 1}, false},
		{"3.x", Version{}, true},
		{"v3.0", Version{}, true},
		{"-1.0", Version{}, true},
		{"3.", Version{}, true},
		{"1234567.0", Version{}, true},
	}
	for _, tt := range tests {
		got, err := ParseVersion(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("ParseVersion(%q) error = %v, wantErr %v", tt.in, err, tt.wantErr)
			continue
		}
		if err == nil && got != tt.want {
			t.Errorf("ParseVersion(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestAdmit(t *testing.T) {
	min, max := Version{3, 0}, Version{3, 0}
	tests := []struct {
		v    Version
		want bool
	}{
		{Version{3, 0}, true},
		{Version{2, 9}, false},
		{Version{1, 0}, false},
		{Version{3, 1}, false},
		{Version{4, 0}, false},
	}
	for _, tt := range tests {
		err := Admit(tt.v, min, max)
		if (err == nil) != tt.want {
			t.Errorf("Admit(%v) = %v, want admitted=%v", tt.v, err, tt.want)
		}
		if err != nil && CodeOf(err, "") != CodeUnsupportedProtocolVersion {
			t.Errorf("Admit(%v) code = %v", tt.v, CodeOf(err, ""))
		}
	}
}

func TestAdmitVersionString(t *testing.T) {
	for in, ok := range map[string]bool{"3.0": true, "": false, "2.0": false, "3.1": false, "junk": false} {
		if err := AdmitVersionString(in); (err == nil) != ok {
			t.Errorf("AdmitVersionString(%q) = %v, want ok=%v", in, err, ok)
		}
	}
}

func TestVersionLess(t *testing.T) {
	if !(Version{2, 9}).Less(Version{3, 0}) || (Version{3, 0}).Less(Version{3, 0}) || !(Version{3, 0}).Less(Version{3, 1}) {
		t.Fatal("Less is wrong")
	}
	if s := (Version{3, 0}).String(); s != "3.0" {
		t.Fatalf("String = %q", s)
	}
}
