package connector

// EncodeOpenAck exposes encodeOpenAck to the external tests.
var EncodeOpenAck = encodeOpenAck
