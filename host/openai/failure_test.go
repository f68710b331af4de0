package openai_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/xconn/xconn/host/openai"
	"github.com/xconn/xconn/host/openai/openaitest"
)

// TestMisconfiguredModelServer: a model server that refuses the agent's
// setup (a wrong key: 401; an unknown model: OpenAI's 404 model_not_found;
// a base URL without /v1: a bare "404 page not found") is not retried,
// the user is told the agent is misconfigured (not "try again in a
// moment"), and the cause is logged once, with the URL and without the
// key, however many messages arrive; a transient failure (503) still gets
// the apology that asks to try again.
func TestMisconfiguredModelServer(t *testing.T) {
	const key = "sk-misconfig-canary-5150"
	cases := []struct {
		name    string
		srv     openaitest.Options
		base    func(*openaitest.Server) string
		model   string
		wantLog string
	}{
		{"wrong key", openaitest.Options{APIKey: "sk-right-one"}, func(s *openaitest.Server) string { return s.URL }, "fake-model", "401 Unauthorized"},
		{"unknown model", openaitest.Options{APIKey: key, Models: []string{"llama3.2"}}, func(s *openaitest.Server) string { return s.URL }, "llama9", "model_not_found"},
		{"base URL without /v1", openaitest.Options{APIKey: key}, func(s *openaitest.Server) string { return strings.TrimSuffix(s.URL, "/v1") }, "fake-model", "404 page not found"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := openaitest.NewServer(c.srv)
			defer srv.Close()
			var logs syncBuilder
			a := newAgent(t, srv, &fakeHost{}, nil, func(o *openai.Options) {
				o.APIKey, o.Model, o.BaseURL = key, c.model, c.base(srv)
				o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			})
			rs := &recordStream{}
			for _, id := range []string{"m1", "m2"} {
				if err := a.HandleMessage(context.Background(), userMsg(id, "hi"), rs); err != nil {
					t.Fatal(err)
				}
			}
			f := rs.finals()
			if len(f) != 2 || f[0].Text != openai.DefaultMisconfigured || f[1].Text != openai.DefaultMisconfigured {
				t.Fatalf("finals %+v; want %q twice", f, openai.DefaultMisconfigured)
			}
			if n := len(srv.Requests()); c.name != "base URL without /v1" && n != 2 {
				t.Fatalf("%d requests for 2 messages: a misconfiguration must not be retried", n)
			}
			l := logs.String()
			if strings.Count(l, "level=ERROR") != 1 || !strings.Contains(l, c.wantLog) || !strings.Contains(l, "url="+c.base(srv)+"/chat/completions") {
				t.Fatalf("want one ERROR line naming %q and the URL; logs:\n%s", c.wantLog, l)
			}
			if strings.Contains(l+f[0].Text, key) {
				t.Fatalf("the key is in the log or the reply:\n%s", l)
			}
		})
	}
	t.Run("503 is transient", func(t *testing.T) {
		srv := openaitest.NewServer(openaitest.Options{})
		defer srv.Close()
		srv.SetFallback(openaitest.Error(http.StatusServiceUnavailable, "overloaded"))
		a := newAgent(t, srv, &fakeHost{}, nil, func(o *openai.Options) { o.Retry.MaxAttempts = 2 })
		rs := &recordStream{}
		if err := a.HandleMessage(context.Background(), userMsg("m1", "hi"), rs); err != nil {
			t.Fatal(err)
		}
		if f := rs.finals(); len(f) != 1 || !strings.HasPrefix(f[0].Text, openai.DefaultApology) || !strings.Contains(f[0].Text, "try again") {
			t.Fatalf("finals %+v", f)
		}
	})
}

// TestPreflight: the check at start tells a wrong base URL, key and model
// apart, in one line each, against a fake server answering 401 and 404;
// a model the server does not list but serves (llama.cpp serves any name)
// passes after one tiny request.
func TestPreflight(t *testing.T) {
	const key = "sk-preflight-canary-77"
	srv := openaitest.NewServer(openaitest.Options{APIKey: key, Models: []string{"llama3.2", "qwen2.5"}})
	defer srv.Close()
	anyModel := openaitest.NewServer(openaitest.Options{})
	defer anyModel.Close()
	anyModel.SetFallback(openaitest.Text("OK"))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	silent := "http://" + ln.Addr().String() + "/v1"
	ln.Close()

	cases := []struct {
		name, base, key, model string
		want                   openai.PreflightProblem // 0: passes
		say                    string
	}{
		{"listed model", srv.URL, key, "llama3.2", 0, ""},
		{"wrong key", srv.URL, "sk-wrong", "llama3.2", openai.PreflightKey, "refused the API key"},
		{"no key", srv.URL, "", "llama3.2", openai.PreflightKey, "OPENAI_API_KEY"},
		{"unknown model", srv.URL, key, "llama9", openai.PreflightModel, `has no model "llama9"`},
		{"base URL without /v1", strings.TrimSuffix(srv.URL, "/v1"), key, "llama3.2", openai.PreflightBaseURL, "usually ends in /v1"},
		{"nothing listening", silent, key, "llama3.2", openai.PreflightUnreachable, "nothing answers"},
		{"unlisted model served", anyModel.URL, "", "whatever-is-loaded", 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, err := openai.New(openai.Options{Model: c.model, BaseURL: c.base, APIKey: c.key})
			if err != nil {
				t.Fatal(err)
			}
			err = a.Preflight(context.Background())
			var pe *openai.PreflightError
			switch {
			case c.want == 0 && err != nil:
				t.Fatalf("Preflight = %v, want nil", err)
			case c.want == 0:
				return
			case !errors.As(err, &pe) || pe.Problem != c.want || !pe.Permanent():
				t.Fatalf("Preflight = %#v, want problem %d", err, c.want)
			}
			msg := err.Error()
			if !strings.Contains(msg, c.say) || strings.Contains(msg, "\n") || (c.key != "" && strings.Contains(msg, c.key)) {
				t.Fatalf("message %q: want one line with %q and without the key", msg, c.say)
			}
			if c.want == openai.PreflightModel && !strings.Contains(msg, "llama3.2, qwen2.5") {
				t.Fatalf("message %q does not list the models offered", msg)
			}
		})
	}
}
