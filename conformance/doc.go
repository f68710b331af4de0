// Package conformance checks a Connector Server of the xAgent Connector
// protocol 3.0 over the wire, whatever language it is written in.
//
// The package holds a registry of requirements ([Requirements]), each with a
// stable ID tied to a spec section, a level (MUST or SHOULD) and the
// capability it needs; the MUSTs that cannot be observed on the wire are
// listed by [NonObservable] with the reason. [Check] runs every applicable
// requirement against a Base URL over HTTP and WebSocket and returns a
// [Report] that renders as text, JSON or JUnit XML. [Run] does the same from a
// connector author's go test.
//
// A requirement whose capability the Connector declares is mandatory; one
// whose capability is absent is skipped with the reason. The suite imports
// only the protocol package: it tests what is on the wire, nothing else.
//
// Checks that need a signed-in channel have side effects on the target
// system: they deliver a few short assistant messages (text "xconn
// conformance check ...") and, only when [Options.Tool] names one, invoke
// that Card tool with [Options.ToolArgs]; the suite never invents tool
// arguments. Run them against a test account. The run signs its channel out
// (auth.logout) when it ends, whatever the verdicts. [Options.Inbound] lets
// the inbound and redelivery checks ask the target for messages, for
// example from a connector's go test with a fake target. With
// [Options.ToolArgs] given too, that tool is invoked a second time with the
// same tool_call_id (tool.idempotency): name a side-effecting tool.
//
// The other side of the wire has a suite of its own: package
// conformance/xagent serves a scripted Connector Server and checks the
// xAgent-side implementation that connects to it (xconn check --xagent). It
// reports with this package's [Report], [Requirement] and [Result].
package conformance
