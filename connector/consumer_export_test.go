package connector

// StoredBinding returns the stored form of a binding whose Data is data
// and whose secrets (redacted from logs) are secrets, for tests that seed
// a store with a signed-in channel.
func StoredBinding(data []byte, secrets ...string) []byte {
	b, err := encodeBinding(Binding{Data: data, Secrets: secrets})
	if err != nil {
		panic(err)
	}
	return b
}
