//go:build !(386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm)

package kvevents

// nativeLittleEndian: tokens are encoded to u32le before hashing.
const nativeLittleEndian = false
