package connector

// SecretsHeld returns the values and bytes of the server's redaction set.
// For the external tests.
func (s *Server) SecretsHeld() (n, bytes int) { return s.secrets.Len(), s.secrets.Bytes() }

// QueuedBytes returns the bytes queued on the data-plane sockets: inbound
// frames not yet handled and outbound frames not yet written. For the
// external tests.
func (s *Server) QueuedBytes() (in, out int64) {
	s.mu.Lock()
	socks := make([]*session, 0, len(s.sockets))
	for sess := range s.sockets {
		socks = append(socks, sess)
	}
	s.mu.Unlock()
	for _, sess := range socks {
		sess.mu.Lock()
		in += sess.inBytes
		sess.mu.Unlock()
		out += sess.conn.QueuedBytes()
	}
	return in, out
}

// Sockets returns the data-plane slots taken. For the external tests.
func (s *Server) Sockets() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.slots
}
