package simulate

import (
	"reflect"
	"sync"
	"unsafe"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/schemas"
	"github.com/zeebo/xxh3"
)

// pinKeys makes each request's pin keys once for every run (the engine
// runs' pins.Deps.Keys): every pinning row pins the same request's
// prompt and output at its response, and SHA-256 over each of its
// pages was a fifth of a whatif's CPU when each row made them again.
// The keys are held from the first run that asks until release
// (prompts.release: every run has played the request's response), so
// what is held is the responses of one stretch, not the trace. A call
// whose arguments differ from those the held keys were made of (another
// layout, namespace, caps or tokens) gets keys made for it alone: the
// memo never answers for other arguments. Safe for concurrent use.
type pinKeys struct {
	mu   sync.Mutex
	held map[string]*pinKeysEntry // by request id
	made int                      // keys made, not taken from held: for tests
}

type pinKeysEntry struct {
	ready chan struct{} // closed once keys, cut and err are set
	args  pinKeysArgs
	keys  []string
	cut   int
	err   error
}

// pinKeysArgs are what the keys are made of; the tokens by their
// lengths and 128-bit hashes (holding them would hold half a megabyte a
// request).
type pinKeysArgs struct {
	layout            *schemas.ObjectLayout
	ns                actions.Namespace
	maxKeys, maxBytes int
	prompt, output    int
	promptSum         xxh3.Uint128
	outputSum         xxh3.Uint128
}

func (a pinKeysArgs) same(b pinKeysArgs) bool {
	// Each run's cluster has its own copy of the layout.
	return a.ns == b.ns && a.maxKeys == b.maxKeys && a.maxBytes == b.maxBytes && a.prompt == b.prompt && a.output == b.output &&
		a.promptSum == b.promptSum && a.outputSum == b.outputSum && (a.layout == b.layout || reflect.DeepEqual(a.layout, b.layout))
}

func newPinKeys() *pinKeys { return &pinKeys{held: map[string]*pinKeysEntry{}} }

// keys is a pins.KeysFunc: actions.ObjectKeysCapped's result, made once
// for a request whatever the number of runs asking.
func (m *pinKeys) keys(requestID string, layout *schemas.ObjectLayout, prompt, output []uint32, ns actions.Namespace,
	maxKeys, maxBytes int) ([]string, int, error) {
	args := pinKeysArgs{layout: layout, ns: ns, maxKeys: maxKeys, maxBytes: maxBytes, prompt: len(prompt), output: len(output),
		promptSum: xxh3.Hash128(tokenBytes(prompt)), outputSum: xxh3.Hash128(tokenBytes(output))}
	m.mu.Lock()
	e, ok := m.held[requestID]
	if !ok {
		// This run makes them; another asking meanwhile waits for them
		// rather than make them again.
		e = &pinKeysEntry{ready: make(chan struct{}), args: args}
		m.held[requestID] = e
		m.made++
	}
	m.mu.Unlock()
	if !ok {
		e.keys, e.cut, e.err = objectKeys(layout, prompt, output, ns, maxKeys, maxBytes)
		close(e.ready)
		return e.keys, e.cut, e.err
	}
	<-e.ready
	if !e.args.same(args) {
		m.mu.Lock()
		m.made++
		m.mu.Unlock()
		return objectKeys(layout, prompt, output, ns, maxKeys, maxBytes)
	}
	return e.keys, e.cut, e.err
}

// objectKeys is actions.ObjectKeysCapped of prompt followed by output.
func objectKeys(layout *schemas.ObjectLayout, prompt, output []uint32, ns actions.Namespace, maxKeys, maxBytes int) ([]string, int, error) {
	tokens := append(append(make([]uint32, 0, len(prompt)+len(output)), prompt...), output...)
	return actions.ObjectKeysCapped(layout, tokens, ns, maxKeys, maxBytes)
}

// release drops request id's keys; a later call makes them again.
func (m *pinKeys) release(requestID string) {
	m.mu.Lock()
	delete(m.held, requestID)
	m.mu.Unlock()
}

// size is how many requests' keys are held.
func (m *pinKeys) size() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.held)
}

// tokenBytes views tokens as bytes (in the machine's order: the hash
// only compares tokens within this process), without a copy.
func tokenBytes(tokens []uint32) []byte {
	if len(tokens) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&tokens[0])), len(tokens)*4)
}
