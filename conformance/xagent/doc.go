// Package xagent is the conformance suite for the other side of the wire:
// it checks an xAgent-side implementation (a host) of the xAgent Connector
// protocol 3.0 with IM Profile v2 (and IM v1's message.push), by serving a scripted Connector Server
// that the host under test connects to. Package conformance checks
// Connector Servers; this package checks what connects to them.
//
// A [Server] is an http.Handler serving the Card, the Skill, /health, /ws
// and the transfer plane (POST /files/uploads, GET /files/refs/{file_ref})
// of a small IM Connector (Card id [CardID]; it declares xagent.im.v2 and
// xagent.im.v1). It records every HTTP
// request and packet, answers the protocol generically (hello, channels,
// sign-in, tools, Descriptors, pings) and, once a channel is signed in,
// plays a fixed script on it:
//
//  1. sends a user message (M1), waits for its ack and for the reply's
//     final, leaves that final unacknowledged and closes the connection;
//  2. on the reconnect, answers hello with a new connector_id (a
//     replacement), expects the signed-in channel to be reopened and the
//     pending final to come again, and accepts it;
//  3. sends M1 again (a duplicate: ack duplicate, no second reply), then
//     M1's message_id with other text (a conflict: rejected, not
//     retryable);
//  4. sends M2 and rejects its reply's final as retryable (the final must
//     come again with the same message_id), then accepts it;
//  5. sends M3 with a file (xAgent downloads it before accepting), and
//     expects the reply's files uploaded through POST /files/uploads
//     before the final that names them;
//  6. closes the connection again and expects the next hello to carry the
//     new connector_id, the channel to be reopened and no accepted final to
//     come back within [Options.Quiet];
//  7. on that connection, sends P1, an IM v1 message.push whose file has
//     only a url (when the hello lists xagent.im.v1), and M4, whose file's
//     download_url is a signed URL on another origin of this server
//     ([Options.OtherOrigin], by default the loopback alias of the host
//     the xAgent used): both files must be fetched, M4's before its ack
//     says accepted. On loopback an xAgent that guards private addresses
//     needs its opt-in for the run (xconn host --allow-private-downloads).
//
// The script needs an xAgent whose agent replies to every user message
// with at least one final (xconn host's echo agent does, streaming deltas
// first, and sends received files back). Sign-in: the form flow [FormFlow]
// takes one required secret field, "code" (any non-empty value signs in);
// the QR flow [QRFlow] needs no person: its session answers pending, then
// qr_refresh_required, signs in on the poll after a refresh=true status,
// and its poll_interval_millis is [QRPollInterval]. The tool [ToolID]
// echoes its "text" argument. Requirements about packets the script cannot
// cause (a QR sign-in, auth.cancel, auth.logout, tool.invoke) are checked
// when the xAgent sends them during the run and skipped otherwise, with the
// reason.
//
// The requirements have stable IDs tied to spec sections, a level and a
// capability, like package conformance's; the report is a
// [conformance.Report], written as text, JSON or JUnit by its methods.
//
// From the command line:
//
//	xconn check --xagent --listen 127.0.0.1:8099 --api-key KEY
//	xconn host http://127.0.0.1:8099 --api-key KEY --auth-flow xagent_check_form --auth-input code=1234 --allow-private-downloads
//
// A Server is safe for concurrent use; Close stops every connection it
// serves and the script, and waits for them.
package xagent
