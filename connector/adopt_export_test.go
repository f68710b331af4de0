package connector

// ExpireLease runs the lease expiry of connector_id id now, as the janitor
// does when its grace deadline passes, and returns once the cascade is
// done. It does nothing while id has a socket. For the external tests.
func (s *Server) ExpireLease(id string) {
	s.mu.Lock()
	l := s.leases[id]
	ok := l != nil && l.sockets == 0
	if ok {
		delete(s.leases, id) // as expireLeases: a hello from now on gets a new connector_id
	}
	s.mu.Unlock()
	if ok {
		s.unregister(id)
	}
}
