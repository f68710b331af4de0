package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xconn/xconn/conformance"
	"github.com/xconn/xconn/protocol"
)

// QRWait bounds the conformance suite's wait for a QR flow's scan.
const QRWait = 10 * time.Second

// runConformance is the conformance scenario of Run.
func runConformance(t *testing.T, tg Target) {
	r := newRig(t, tg)
	f := r.fake
	var inbound atomic.Int32
	opts := conformance.Options{APIKey: tg.APIKey, AuthFlow: tg.SignIn.Flow, AuthInput: tg.SignIn.Input,
		Tool: tg.Tool, ToolArgs: tg.ToolArgs, Out: testLog{t}}
	if flow, ok := r.card.AuthFlow(tg.SignIn.Flow); ok && flow.Type == protocol.AuthFlowQRLogin {
		opts.AuthOpenURL, opts.QRWait = true, QRWait
	}
	if f.Say != nil {
		opts.Inbound = func(ctx context.Context, channelID string) error {
			return f.Say(ctx, fmt.Sprintf("inbound %d for %s", inbound.Add(1), channelID))
		}
	}
	rep, err := conformance.Check(t.Context(), r.conn.URL, opts)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	_ = rep.WriteText(&text)
	t.Log(rep.Summary())
	if passed, failed, _ := rep.Counts(); !rep.OK() || failed != 0 || passed == 0 {
		t.Fatalf("failed %v:\n%s", rep.Failed(), text.String())
	}
	for _, id := range mustPass(r.card, tg, f) {
		if res, ok := rep.Result(id); !ok || res.Status != conformance.Pass {
			t.Errorf("%s: %s %s (want pass)", id, res.Status, res.Reason)
		}
	}
	may := maySkip(r.card, tg, f)
	for _, res := range rep.Results {
		if res.Status != conformance.Skip {
			continue
		}
		if req, _ := conformance.Lookup(res.ID); !may(req, res) {
			t.Errorf("%s (%s, %s) skipped: %s", res.ID, res.Level, req.Capability, res.Reason)
		}
	}
	if f.Say != nil && inbound.Load() == 0 {
		t.Error("the suite never asked the fake for an inbound message")
	}
	if f.Conformance != nil {
		f.Conformance(t, rep)
	}
	if t.Failed() {
		t.Logf("report:\n%s", text.String())
	}
}

// mustPass is the kit's list of requirements that must pass, plus
// tg.MustPass.
func mustPass(card *protocol.Card, tg Target, f *Fake) []string {
	ids := []string{"auth.authenticated"}
	if tg.Tool != "" {
		ids = append(ids, "tool.invoke")
	}
	if f.Say != nil && card.DeclaresProfile(protocol.ProfileIMv2) {
		ids = append(ids, "imv2.inbound-valid", "imv2.inbound-delivered", "imv2.inbound-message-id",
			"imv2.redelivery", "imv2.inbound-acked-not-resent", "imv2.ack-accepted")
	}
	return append(ids, tg.MustPass...)
}

// maySkip returns whether a skipped requirement is one this run cannot
// reach: a capability the Card does not declare or the Target does not
// give, a profile's check when the Card does not declare the profile, or
// tool.progress-push for a tool that sends no progress (optional, section
// 8.20).
func maySkip(card *protocol.Card, tg Target, f *Fake) func(conformance.Requirement, conformance.Result) bool {
	flowTypes := map[string]bool{}
	for _, fl := range card.AuthFlows {
		flowTypes[fl.Type] = true
	}
	absent := map[conformance.Capability]bool{
		conformance.CapHasPathPrefix:          true, // the kit serves at the root
		conformance.CapPublishesFiles:         true, // Say writes text
		conformance.CapPublishesMessagePush:   !card.DeclaresProfile(protocol.ProfileIMv1) || f.Say == nil,
		conformance.CapDeclaresIMv1:           !card.DeclaresProfile(protocol.ProfileIMv1),
		conformance.CapDeclaresIMv2:           !card.DeclaresProfile(protocol.ProfileIMv2),
		conformance.CapDeclaresDevice:         !card.DeclaresProfile(protocol.ProfileDeviceV1),
		conformance.CapHasFormFlow:            !flowTypes[protocol.AuthFlowForm],
		conformance.CapHasQRFlow:              !flowTypes[protocol.AuthFlowQRLogin],
		conformance.CapHasTools:               len(card.Tools) == 0,
		conformance.CapInboundHook:            f.Say == nil,
		conformance.CapPublishesChat:          f.Say == nil,
		conformance.CapToolSelected:           tg.Tool == "",
		conformance.CapSideEffectToolSelected: tg.Tool == "" || len(tg.ToolArgs) == 0,
	}
	prefixes := map[string]bool{
		"imv1.":   !card.DeclaresProfile(protocol.ProfileIMv1),
		"imv2.":   !card.DeclaresProfile(protocol.ProfileIMv2),
		"device.": !card.DeclaresProfile(protocol.ProfileDeviceV1),
	}
	return func(req conformance.Requirement, res conformance.Result) bool {
		if absent[req.Capability] || slices.Contains(tg.MaySkip, res.ID) {
			return true
		}
		for p, ok := range prefixes {
			if ok && strings.HasPrefix(res.ID, p) {
				return true
			}
		}
		return res.ID == "tool.progress-push" && strings.Contains(res.Reason, "sent no tool.progress.push")
	}
}
