package metrics

// AffinityCounts hands the affinity writer's counts (client.AffinityCounts)
// to the hintstream_affinity_* families.
type AffinityCounts struct{ f *Families }

// Affinity returns f's affinity counts for client.NewAffinityWriter.
func (f *Families) Affinity() AffinityCounts { return AffinityCounts{f} }

// AffinityWritten counts n records written.
func (c AffinityCounts) AffinityWritten(n uint64) { c.f.AffinityWritten.Add(n) }

// AffinitySkipped counts a record with nothing to write.
func (c AffinityCounts) AffinitySkipped(reason string) { c.f.AffinitySkipped.Inc(reason) }

// AffinityDropped counts n records not written.
func (c AffinityCounts) AffinityDropped(reason string, n uint64) { c.f.AffinityDropped.Add(reason, n) }
