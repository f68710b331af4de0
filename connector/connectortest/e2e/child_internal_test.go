package e2e

import (
	"testing"
)

func TestRunPattern(t *testing.T) {
	for test, want := range map[string]string{
		"TestE2E":                 "^TestE2E$",
		"TestE2E/telegram":        "^TestE2E$/^telegram$",
		"TestX/a+b_(c)":           `^TestX$/^a\+b_\(c\)$`,
		"TestBroken/posts_twice/": "^TestBroken$/^posts_twice$/^$",
	} {
		if got := runPattern(test); got != want {
			t.Errorf("runPattern(%q) = %q, want %q", test, got, want)
		}
	}
}

func TestChildOf(t *testing.T) {
	t.Setenv(childEnv, `{"test":"TestE2E/x","data_dir":"/d","fake":"http://f","url":"http://c","api_key":"k"}`)
	if c, ok := childOf("TestE2E/x"); !ok || c.DataDir != "/d" || c.Fake != "http://f" || c.URL != "http://c" || c.APIKey != "k" {
		t.Fatalf("childOf = %+v %v", c, ok)
	}
	if _, ok := childOf("TestE2E"); ok {
		t.Fatal("another test is not the child")
	}
	t.Setenv(childEnv, "not json")
	if _, ok := childOf("TestE2E/x"); ok {
		t.Fatal("a broken configuration is not a child's")
	}
}

func TestPartialOf(t *testing.T) {
	p := partialOf("You said: hi")
	for s, want := range map[string]bool{"You": true, "You said:": true, "You said: hi": false, "": false, "Hi": false, "You said: hi!": false} {
		if p(s) != want {
			t.Errorf("partialOf(%q) = %v", s, !want)
		}
	}
}
