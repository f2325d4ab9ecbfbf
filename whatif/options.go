package whatif

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/hintstream/hintstream/internal/cmdline"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/whatif/cluster"
	"github.com/hintstream/hintstream/whatif/simulate"
	"github.com/hintstream/hintstream/whatif/workload"
)

// ErrInvalidOption marks an unusable option.
var ErrInvalidOption = errors.New("whatif: invalid option")

// Defaults of the cluster model: the hint-value harness's, so that both
// answer the same question by default.
const (
	DefaultWorkers         = cluster.DefaultWorkers         // 4
	DefaultDeviceBlocks    = simulate.DefaultDeviceBlocks   // per worker: 1,024 blocks
	DefaultKVBytesPerToken = schemas.DefaultKVBytesPerToken // 144 KiB: Qwen3-8B, as run assumes
	DefaultL3Bandwidth     = schemas.DefaultL3Bandwidth     // 10 GB/s, as run assumes
	DefaultAlpha           = simulate.DefaultAlpha          // 0.25
	DefaultBlockSize       = workload.DefaultBlockSize      // 512 tokens (Mooncake's hash_ids)
	// DefaultL3Bytes is simulate.DefaultL3Blocks (6,144) pages of
	// DefaultBlockSize tokens at DefaultKVBytesPerToken: 432 GiB.
	DefaultL3Bytes = int64(simulate.DefaultL3Blocks) * DefaultBlockSize * DefaultKVBytesPerToken
)

// MaxKVBytesPerToken bounds Cluster.KVBytesPerToken: 1 GiB, thousands of
// times a large model's.
const MaxKVBytesPerToken = 1 << 30

// MaxSweepPoints bounds a sweep: each point plays every policy again.
const MaxSweepPoints = 64

// Cluster is the simulated cluster: sizes, link and costs.
type Cluster struct {
	Workers         int     `json:"workers"`
	DeviceBlocks    int     `json:"device_blocks_per_worker"`
	L3Bytes         int64   `json:"l3_bytes"`
	L3Bandwidth     float64 `json:"l3_bandwidth_bytes_per_s"` // 0: loads are instant
	Alpha           float64 `json:"alpha"`
	KVBytesPerToken int     `json:"kv_bytes_per_token"`
	BlockSize       int     `json:"block_size"`
}

// DefaultCluster is the cluster model with every default.
func DefaultCluster() Cluster {
	return Cluster{Workers: DefaultWorkers, DeviceBlocks: DefaultDeviceBlocks, L3Bytes: DefaultL3Bytes,
		L3Bandwidth: DefaultL3Bandwidth, Alpha: DefaultAlpha, KVBytesPerToken: DefaultKVBytesPerToken, BlockSize: DefaultBlockSize}
}

// L3Pages is the L3 capacity in pages of one block.
func (c Cluster) L3Pages() int {
	return int(c.L3Bytes / (int64(c.BlockSize) * int64(c.KVBytesPerToken)))
}

// Validate refuses a cluster that cannot be simulated, naming the
// `hintstream whatif` flag of the field.
func (c Cluster) Validate() error {
	switch {
	case c.Workers <= 0:
		return fmt.Errorf("%w: --workers %d (want ≥ 1)", ErrInvalidOption, c.Workers)
	case c.DeviceBlocks <= 0:
		return fmt.Errorf("%w: --device-blocks %d (want ≥ 1)", ErrInvalidOption, c.DeviceBlocks)
	case c.BlockSize <= 0 || c.BlockSize > workload.MaxTraceTokens:
		return fmt.Errorf("%w: --block-size %d (want 1 … %d)", ErrInvalidOption, c.BlockSize, workload.MaxTraceTokens)
	case c.KVBytesPerToken <= 0 || c.KVBytesPerToken > MaxKVBytesPerToken:
		// Bounded so that a page's bytes (block size × this) cannot
		// overflow.
		return fmt.Errorf("%w: --kv-bytes-per-token %d (want 1 … %d)", ErrInvalidOption, c.KVBytesPerToken, MaxKVBytesPerToken)
	case c.L3Bytes < 0 || c.L3Pages() < 1:
		return fmt.Errorf("%w: --l3 %d bytes holds no page of %d bytes", ErrInvalidOption, c.L3Bytes,
			int64(c.BlockSize)*int64(c.KVBytesPerToken))
	case math.IsNaN(c.L3Bandwidth) || math.IsInf(c.L3Bandwidth, 0) || c.L3Bandwidth < 0:
		return fmt.Errorf("%w: --l3-bandwidth %v", ErrInvalidOption, c.L3Bandwidth)
	case math.IsNaN(c.Alpha) || c.Alpha <= 0 || c.Alpha > 1:
		return fmt.Errorf("%w: --alpha %v (want 0 < α ≤ 1)", ErrInvalidOption, c.Alpha)
	}
	return nil
}

// Sweep varies one dimension of the cluster.
type Sweep struct {
	Dim    string    `json:"dimension"` // "l3", "device" or "bandwidth"
	Values []float64 `json:"values"`    // bytes, blocks per worker, bytes/s
	Labels []string  `json:"labels"`    // as given
}

// The sweep dimensions.
const (
	SweepL3        = "l3"
	SweepDevice    = "device"
	SweepBandwidth = "bandwidth"
)

// ParseSweep reads DIM=V1,V2,...: l3=1GiB,4GiB (bytes), device=512,2048
// (blocks per worker) or bandwidth=10GB/s,25GB/s (bytes per second).
func ParseSweep(s string) (Sweep, error) {
	dim, list, ok := strings.Cut(s, "=")
	if !ok || list == "" {
		return Sweep{}, fmt.Errorf("%w: sweep %q (want DIM=V1,V2,... with DIM l3, device or bandwidth)", ErrInvalidOption, s)
	}
	sw := Sweep{Dim: strings.TrimSpace(dim)}
	if n := strings.Count(list, ",") + 1; n > MaxSweepPoints {
		return Sweep{}, fmt.Errorf("%w: sweep of %d values (at most %d: each plays every policy again)", ErrInvalidOption, n, MaxSweepPoints)
	}
	for _, v := range strings.Split(list, ",") {
		v = strings.TrimSpace(v)
		var f float64
		var err error
		switch sw.Dim {
		case SweepL3:
			var n int64
			n, err = cmdline.ParseBytes(v)
			f = float64(n)
		case SweepDevice:
			var n int
			n, err = strconv.Atoi(v)
			if err == nil && n < 1 {
				err = fmt.Errorf("%d blocks", n)
			}
			f = float64(n)
		case SweepBandwidth:
			f, err = cmdline.ParseBytesPerSecond(v)
		default:
			return Sweep{}, fmt.Errorf("%w: sweep dimension %q (want l3, device or bandwidth)", ErrInvalidOption, sw.Dim)
		}
		if err != nil {
			return Sweep{}, fmt.Errorf("%w: sweep %s value %q: %v", ErrInvalidOption, sw.Dim, v, err)
		}
		sw.Values = append(sw.Values, f)
		sw.Labels = append(sw.Labels, v)
	}
	return sw, nil
}

// Validate checks c at every point of the sweep, naming the first that
// cannot be simulated, so a bad point is refused before the trace is read.
func (s Sweep) Validate(c Cluster) error {
	for i := range s.Values {
		if err := s.apply(c, i).Validate(); err != nil {
			return fmt.Errorf("sweep %s value %q: %w", s.Dim, s.Labels[i], err)
		}
	}
	return nil
}

// apply is c at sweep point i.
func (s Sweep) apply(c Cluster, i int) Cluster {
	switch s.Dim {
	case SweepL3:
		c.L3Bytes = int64(s.Values[i])
	case SweepDevice:
		c.DeviceBlocks = int(s.Values[i])
	case SweepBandwidth:
		c.L3Bandwidth = s.Values[i]
	}
	return c
}

// FormatBytes writes n with a binary unit.
func FormatBytes(n float64) string {
	for _, u := range []struct {
		s string
		m float64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if math.Abs(n) >= u.m {
			return strconv.FormatFloat(n/u.m, 'f', 1, 64) + " " + u.s
		}
	}
	return strconv.FormatFloat(n, 'f', 0, 64) + " B"
}

// SelectPolicies picks rows by name from every policy whatif has
// (simulate.Policies, simulate.Peers, then simulate.OptInPolicies): names
// separated by commas, in the order given.
func SelectPolicies(list string) ([]simulate.Policy, error) {
	all := allPolicies()
	var out []simulate.Policy
	seen := map[string]bool{}
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		found := false
		for _, p := range all {
			if p.Name == n {
				found = true
				if !seen[n] {
					out = append(out, p)
				}
				seen[n] = true
			}
		}
		if !found {
			return nil, fmt.Errorf("%w: --policies: no policy %q (want names separated by commas from %s)", ErrInvalidOption, n, PolicyNames())
		}
	}
	return out, nil
}

// PolicyNames are the names --policies takes, quoted, in order.
func PolicyNames() string {
	var names []string
	for _, p := range allPolicies() {
		names = append(names, strconv.Quote(p.Name))
	}
	return strings.Join(names, ", ")
}

// allPolicies is every row --policies can name; the default table is
// the first two groups (Run).
func allPolicies() []simulate.Policy {
	return append(append(simulate.Policies(), simulate.Peers()...), simulate.OptInPolicies()...)
}

// OptInPolicyNames are the rows the default table leaves out, quoted.
func OptInPolicyNames() string {
	var names []string
	for _, p := range simulate.OptInPolicies() {
		names = append(names, strconv.Quote(p.Name))
	}
	return strings.Join(names, ", ")
}
