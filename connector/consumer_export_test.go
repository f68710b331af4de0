package connector

// StoredBinding returns the stored form of a binding whose Data is data,
// for tests that seed a store with a signed-in channel.
func StoredBinding(data []byte) []byte {
	b, err := encodeBinding(Binding{Data: data})
	if err != nil {
		panic(err)
	}
	return b
}
