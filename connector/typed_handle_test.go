package connector_test

import (
	"strings"
	"testing"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/protocol"
)

// TestClientsHandle is issue 33 item 7: the handle SetClient returns gives
// the client and the binding with the types fixed at registration (a wrong
// type does not compile), and both answer the same way, (value, error),
// with connection_not_authenticated for a channel that is not signed in.
func TestClientsHandle(t *testing.T) {
	ht := newHandoffTarget()
	srv, base := startHandoff(t, connectortest.NewStore(t), ht)
	c, id := connectHandoff(t, base)
	ch, err := srv.Channel(id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ht.clients.Get(ch); !isCode(err, protocol.CodeConnectionNotAuthenticated) {
		t.Errorf("Get before sign-in: %v", err)
	}
	if _, err := ht.clients.Binding(ch); !isCode(err, protocol.CodeConnectionNotAuthenticated) {
		t.Errorf("Binding before sign-in: %v", err)
	}
	if _, err := c.SignInForm(testCtx(t), id, "token_login", map[string]string{"token": "tok-handle"}); err != nil {
		t.Fatal(err)
	}
	cl, err := ht.clients.Get(ch)
	if err != nil || cl.token != "tok-handle" {
		t.Fatalf("Get = %+v, %v", cl, err)
	}
	b, err := ht.clients.Binding(ch)
	if err != nil || b.Token != "tok-handle" {
		t.Fatalf("Binding = %+v, %v", b, err)
	}
	if b2, err := connector.BindingOf[handoffBinding](ch); err != nil || b2 != b {
		t.Fatalf("BindingOf = %+v, %v", b2, err)
	}
}

// TestWrongTypeNamesBothTypes: the free functions, which cannot check
// their type parameter at compile time, fail with internal_error naming
// the type asked for and the registered one.
func TestWrongTypeNamesBothTypes(t *testing.T) {
	ht := newHandoffTarget()
	srv, base := startHandoff(t, connectortest.NewStore(t), ht)
	c, id := connectHandoff(t, base)
	if _, err := c.SignInForm(testCtx(t), id, "token_login", map[string]string{"token": "tok-handle"}); err != nil {
		t.Fatal(err)
	}
	ch, _ := srv.Channel(id)
	type otherBinding struct{ Token string }
	_, err := connector.BindingOf[otherBinding](ch)
	if !isCode(err, protocol.CodeInternal) || !strings.Contains(err.Error(), "otherBinding") || !strings.Contains(err.Error(), "handoffBinding") {
		t.Errorf("BindingOf with the wrong type: %v", err)
	}
	_, err = connector.ClientOf[*botClient](ch) // deprecated, and what is tested here
	if !isCode(err, protocol.CodeInternal) || !strings.Contains(err.Error(), "botClient") || !strings.Contains(err.Error(), "handoffClient") {
		t.Errorf("ClientOf with the wrong type: %v", err)
	}
}
