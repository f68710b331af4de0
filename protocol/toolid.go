package protocol

// CheckToolID reports whether id is a valid tool_id (section 10: ASCII
// letters, digits, '_', '.' and '-', at most MaxToolIDLength bytes). The
// error is a [Violations] with path "tool_id"; nil means valid.
func CheckToolID(id string) error {
	var vs Violations
	validateToolID(id, "tool_id", &vs)
	if len(vs) > 0 {
		return vs
	}
	return nil
}
