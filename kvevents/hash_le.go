//go:build 386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm

package kvevents

// nativeLittleEndian: token memory is already the u32le bytes hashed.
const nativeLittleEndian = true
