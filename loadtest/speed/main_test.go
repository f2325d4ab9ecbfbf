package speed

import (
	"context"
	"fmt"
	"os"
	"testing"
)

// bins are the programs under test, built once for the package.
var bins Binaries

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "hintstream-speed-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bins, err = Build(context.Background(), dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
