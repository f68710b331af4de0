package protocol

import (
	"errors"
	"fmt"
	"testing"
)

func TestErrorWireRoundTrip(t *testing.T) {
	e := Errorf(CodeChannelNotOpen, "channel.open must complete before %s", "auth.start")
	wrapped := fmt.Errorf("dispatch: %w", e)
	if got := AsError(wrapped); got != e {
		t.Fatalf("AsError = %v", got)
	}
	if !errors.Is(wrapped, &Error{Code: CodeChannelNotOpen}) || errors.Is(wrapped, &Error{Code: CodeInvalidPacket}) {
		t.Fatal("errors.Is by code is wrong")
	}
	w := e.Wire()
	back := ErrorFromWire(w)
	if back.Code != e.Code || back.Message != e.Message {
		t.Fatalf("round trip = %+v", back)
	}
	if ErrorFromWire(nil) != nil {
		t.Fatal("nil wire error must give nil")
	}
	if CodeOf(errors.New("plain"), CodeInternal) != CodeInternal {
		t.Fatal("fallback code not used")
	}
	if (&Error{Code: CodeHelloRequired}).Error() != "hello_required" {
		t.Fatal("Error() without message")
	}
}
