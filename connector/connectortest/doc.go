// Package connectortest holds test helpers for connectors built on package
// connector: a data-plane [Client] that speaks to a Connector Server over a
// real WebSocket, a SQLite store in a test directory ([NewStore]) and an
// in-process fixture connector ([StartFixture]) that exercises every part
// of the SDK. It is a test aid, not a shipped connector.
package connectortest
