package schemas

// NATS headers on every engine batch `hintstream bridge` republishes to
// kv.events.<worker_id>: the bridge writes them and the KV-event decoder
// reads them, so they belong to the wire, not to either side.
const (
	HeaderBridgeSeq    = "Hintstream-Seq"     // the engine's batch sequence, decimal
	HeaderBridgeEpoch  = "Hintstream-Epoch"   // the engine incarnation (a restart starts a new one)
	HeaderBridgeDpRank = "Hintstream-Dp-Rank" // the publisher's dp rank, decimal
)
