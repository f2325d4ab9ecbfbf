package workload

// SourceRef is where a record came from (a trace line: its first byte,
// length and id count), opaque to this package: a workload kept on disk
// keeps it per request and gives it back (Source), so that the request's
// ids can be read back from the source instead of held.
type SourceRef struct {
	At       int64
	Len, IDs int32
}
