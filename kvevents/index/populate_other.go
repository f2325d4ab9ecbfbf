//go:build !linux

package index

import "unsafe"

// populate is a no-op off Linux: pages fault in as they are written.
func populate(unsafe.Pointer, uintptr) {}
