package cmdline

import (
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// byteUnits are the units a byte size may carry, case as written: SI
// multiples of 1000, binary ones of 1024, B for plain bytes. The binary
// ones come first, so that "KiB" is not read as a number followed by
// "B".
var byteUnits = []struct {
	suffix string
	mult   float64
}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}}

// BytesUsage ends the help text of every byte-size flag (BytesVar):
// the backquoted word is the type flag.PrintDefaults shows.
const BytesUsage = " (a `size`: 4096, 1.5MiB, 384GiB; KB MB GB TB are powers of 1000, KiB MiB GiB TiB of 1024)"

// ParseBytes reads a byte size: an integer number of bytes (optionally
// followed by B), or a number, which may have a fraction, followed by
// KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of
// 1024), rounded to whole bytes. Units are case-sensitive (kb and gib
// are refused: an SI k is lower-case, so "kB" and "KB" would mean
// different things to different readers); blanks around the number and
// between it and the unit are ignored. A sign is kept: what a negative
// size means is the caller's to check. A size past the range of int64
// wraps strconv.ErrRange.
func ParseBytes(s string) (int64, error) {
	num, mult := splitUnit(s)
	if mult == 1 {
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			return 0, bytesError(s, err)
		}
		return n, nil
	}
	f, err := parseUnitNumber(s, num)
	if err != nil {
		return 0, err
	}
	f = math.Round(f * mult)
	if f < math.MinInt64 || f >= math.MaxInt64 {
		return 0, bytesError(s, strconv.ErrRange)
	}
	return int64(f), nil
}

// ParseBytesPerSecond reads a rate: a byte size (ParseBytes' units, the
// number may have a fraction) with an optional "/s": 25GB/s, 10GiB/s.
// It is refused below 0.
func ParseBytesPerSecond(s string) (float64, error) {
	num, mult := splitUnit(strings.TrimSuffix(strings.TrimSpace(s), "/s"))
	f, err := parseUnitNumber(s, num)
	if err != nil {
		return 0, err
	}
	if f *= mult; f < 0 || math.IsInf(f, 0) {
		return 0, bytesError(s, strconv.ErrRange)
	}
	return f, nil
}

func splitUnit(s string) (num string, mult float64) {
	s = strings.TrimSpace(s)
	for _, u := range byteUnits {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			return strings.TrimSpace(n), u.mult
		}
	}
	return s, 1
}

func parseUnitNumber(s, num string) (float64, error) {
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, bytesError(s, strconv.ErrSyntax)
	}
	return f, nil
}

func bytesError(s string, err error) error {
	if ne, ok := err.(*strconv.NumError); ok {
		err = ne.Err
	}
	if err == strconv.ErrRange {
		return fmt.Errorf("byte size %q out of range: %w", s, err)
	}
	return fmt.Errorf("%q is not a byte size (want bytes, or a number with KB, MB, GB, TB, KiB, MiB, GiB or TiB)", s)
}

// bytesValue is a byte-size flag.Value bound to an int or int64.
type bytesValue[T ~int | ~int64] struct{ p *T }

// String is the plain number of bytes, as an int flag shows it, so that
// --help's defaults and a value read back parse the same.
func (b bytesValue[T]) String() string {
	if b.p == nil {
		return "0"
	}
	return strconv.FormatInt(int64(*b.p), 10)
}

func (b bytesValue[T]) Set(s string) error {
	n, err := ParseBytes(s)
	if err != nil {
		return err
	}
	if int64(T(n)) != n {
		return bytesError(s, strconv.ErrRange)
	}
	*b.p = T(n)
	return nil
}

// BytesVar registers a byte-size flag (ParseBytes) bound to p and set to
// value; usage is followed by BytesUsage. Every command's byte-size flags
// go through it, and so do their config file values (they are set as
// flags).
func BytesVar[T ~int | ~int64](fs *flag.FlagSet, p *T, name string, value T, usage string) {
	*p = value
	fs.Var(bytesValue[T]{p}, name, usage+BytesUsage)
}
