package connector

// EncodeOpenAck exposes encodeOpenAck to the external tests.
var EncodeOpenAck = encodeOpenAck

// EncodeOpenAckFrame exposes encodeOpenAckFrame to the external tests.
var EncodeOpenAckFrame = encodeOpenAckFrame
