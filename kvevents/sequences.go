package kvevents

// FullBlockHashes returns the leading hashes of a chain that cover full
// blocks of a promptTokens-token prompt at blockSize tokens a block:
// Dynamo's request trace hashes a partial last block too
// (replay.input_sequence_hashes), which no KV event ever reports, since
// engines store only full blocks. promptTokens 0 (unknown) keeps every
// hash; blockSize 0 keeps none.
func FullBlockHashes(hashes []uint64, promptTokens, blockSize int) []uint64 {
	if blockSize <= 0 {
		return nil
	}
	if promptTokens > 0 {
		return hashes[:min(len(hashes), promptTokens/blockSize)]
	}
	return hashes
}
