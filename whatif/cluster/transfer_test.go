package cluster

import (
	"testing"
	"time"
)

// A turn that arrives while its prefetch is loading gets the pages that
// have landed; the rest it loads from L3 itself. A second prefetch on the
// same worker waits for the link.
func TestPrefetchTakesTransferTime(t *testing.T) {
	// 4-token blocks of 1,000 bytes a token at 4,000 bytes/s: 1 s a block.
	c, err := NewCluster(Config{Workers: 2, DeviceBlocks: 8, L3Blocks: 100, BlockSize: 4,
		KVBytesPerToken: 1000, L3Bandwidth: 4000})
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Prompt(tokensOf(0, 16)) // 4 blocks
	if err != nil {
		t.Fatal(err)
	}
	q, err := c.Prompt(tokensOf(1000, 8)) // 2 other blocks
	if err != nil {
		t.Fatal(err)
	}
	// Both prompts reach L3 through worker 0.
	for _, pr := range []*Prompt{p, q} {
		if _, err := c.Serve(0, pr, len(pr.Tokens), 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := c.Prefetch(1, p); err != nil || n != 4 {
		t.Fatalf("prefetch loaded %d blocks: %v", n, err)
	}
	if n, err := c.Prefetch(1, q); err != nil || n != 2 {
		t.Fatalf("second prefetch loaded %d blocks: %v", n, err)
	}
	c.Advance(2500 * time.Millisecond) // 2 of p's 4 blocks have landed
	out, err := c.Serve(1, p, 16, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if out != (Outcome{DeviceTokens: 8, L3Tokens: 8, UnreadyTokens: 8}) {
		t.Fatalf("mid-load: %+v", out)
	}
	// q's blocks queue behind p's: the first lands at 5 s, the second at 6 s.
	c.Advance(5500 * time.Millisecond)
	if out, _ = c.Serve(1, q, 8, 0, 0); out != (Outcome{DeviceTokens: 4, L3Tokens: 4, UnreadyTokens: 4}) {
		t.Fatalf("queued load: %+v", out)
	}
	// Served pages are ready at once.
	if out, _ = c.Serve(1, p, 16, 0, 0); out != (Outcome{DeviceTokens: 16}) {
		t.Fatalf("after serving: %+v", out)
	}
}

// Without transfer time a prefetch is usable at once.
func TestPrefetchWithoutTransferTimeIsInstant(t *testing.T) {
	c, err := NewCluster(Config{Workers: 2, DeviceBlocks: 8, L3Blocks: 100, BlockSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Prompt(tokensOf(0, 16))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Serve(0, p, 16, 0, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Prefetch(1, p); err != nil {
		t.Fatal(err)
	}
	if out, _ := c.Serve(1, p, 16, 0, 0); out != (Outcome{DeviceTokens: 16}) {
		t.Fatalf("%+v", out)
	}
}
