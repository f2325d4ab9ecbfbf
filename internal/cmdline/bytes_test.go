package cmdline

import (
	"errors"
	"flag"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"
)

func TestParseBytes(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{
		{"0", 0},
		{"4096", 4096},
		{" 4096 ", 4096},
		{"100B", 100},
		{"-1", -1}, // the caller says what a negative size means
		{"9223372036854775807", math.MaxInt64},
		{"1KB", 1000},
		{"1KiB", 1024},
		{"1.5KiB", 1536},
		{"0.3GB", 300_000_000}, // rounded, not truncated to 299,999,999
		{"2 MB", 2_000_000},
		{"1MiB", 1 << 20},
		{"25GB", 25_000_000_000},
		{"384GiB", 384 << 30},
		{"1TB", 1e12},
		{"1TiB", 1 << 40},
		{"4096TiB", 4096 << 40},
		{"-1GiB", -(1 << 30)},
	} {
		got, err := ParseBytes(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"", "lots", "1.5", "1e9", "0.5B", "1 kb", "1kB", "1gib", "1Gib", "1GIB", "GiB", "1 GiB s",
		"NaN GiB", "Inf TB", "1K", "1Ki", "1PB", "0x10", "1,000", "1_000"} {
		if got, err := ParseBytes(in); err == nil || errors.Is(err, strconv.ErrRange) || !strings.Contains(err.Error(), "is not a byte size") {
			t.Errorf("ParseBytes(%q) = %d, %v; want not a byte size", in, got, err)
		}
	}
	for _, in := range []string{"9223372036854775808", "99999999999999999999", "8388608TiB", "1e30TB", "-8388609TiB"} {
		if got, err := ParseBytes(in); !errors.Is(err, strconv.ErrRange) {
			t.Errorf("ParseBytes(%q) = %d, %v; want out of range", in, got, err)
		}
	}
}

func TestParseBytesPerSecond(t *testing.T) {
	for in, want := range map[string]float64{"0": 0, "25GB/s": 25e9, "10GiB/s": 10 << 30, "1.5 MB": 1.5e6, "1e9": 1e9, " 3 KB/s ": 3000} {
		if got, err := ParseBytesPerSecond(in); err != nil || got != want {
			t.Errorf("ParseBytesPerSecond(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1GB/s", "fast", "1gb/s", "Inf", "NaN", "1e400"} {
		if got, err := ParseBytesPerSecond(in); err == nil {
			t.Errorf("ParseBytesPerSecond(%q) = %v, want an error", in, got)
		}
	}
}

func TestBytesVar(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var big int64
	var small int
	BytesVar(fs, &big, "capacity", 1<<20, "the store's capacity")
	BytesVar(fs, &small, "max", 0, "largest message")
	if big != 1<<20 || fs.Lookup("capacity").DefValue != "1048576" {
		t.Fatalf("default %d, shown as %q", big, fs.Lookup("capacity").DefValue)
	}
	if err := fs.Parse([]string{"--capacity", "384GiB", "--max=8MiB"}); err != nil {
		t.Fatal(err)
	}
	if big != 384<<30 || small != 8<<20 || fs.Lookup("capacity").Value.String() != "412316860416" {
		t.Fatalf("parsed %d %d (%s)", big, small, fs.Lookup("capacity").Value)
	}
	if err := fs.Parse([]string{"--max", "1gib"}); err == nil || !strings.Contains(err.Error(), `"1gib" is not a byte size`) {
		t.Fatalf("--max 1gib: %v", err)
	}
	// The help names the type and the units, and shows no default of 0.
	var help strings.Builder
	fs.SetOutput(&help)
	fs.PrintDefaults()
	for _, want := range []string{"-capacity size\n", "the store's capacity (a size: 4096, 1.5MiB, 384GiB; KB MB GB TB are powers of 1000, KiB MiB GiB TiB of 1024) (default 1048576)", "-max size\n"} {
		if !strings.Contains(help.String(), want) {
			t.Errorf("help lacks %q:\n%s", want, help.String())
		}
	}
	if strings.Contains(help.String(), "default 0") {
		t.Errorf("help shows a default of 0:\n%s", help.String())
	}
}
