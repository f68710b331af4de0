// Package testrig holds the rigs this repository's own tests and manual
// trials run on, which import the SDK, the host or a connector and so may
// not live under internal/ (see ARCHITECTURE.md, "Layers"):
//
//   - sdkfixture: the SDK's own in-process fixture connector, used by the
//     tests of connector and host;
//   - cmd/fakeadb, cmd/fakefeishu, cmd/faketelegram: the connectors' test
//     fakes as stand-alone servers, for trying "xconn serve …" by hand;
//   - cmd/hostileprobe: the hostile-client probe of SECURITY.md;
//   - browser: headless Chromium for the browser tests (finding it,
//     window sizes, screenshots kept as artifacts).
//
// Nothing outside tests and these commands imports them; they are free to
// change with the tests that use them. The package itself only holds the
// test that keeps the layer rule.
package testrig
