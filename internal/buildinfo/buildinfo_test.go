package buildinfo

import "testing"

func TestGetHasValues(t *testing.T) {
	in := Get()
	for name, v := range map[string]string{"version": in.Version, "git_tag": in.GitTag, "git_rev": in.GitRev, "build_time": in.BuildTime} {
		if v == "" {
			t.Errorf("%s is empty", name)
		}
	}
	if len(in.BuildTime) != 10 {
		t.Errorf("build_time %q: want 10 digits YYMMDDhhmm", in.BuildTime)
	}
}
