// Package charttest tests the Helm chart in ../hintstream without a
// cluster: it renders the chart with Helm's own Go packages for several
// value sets, decodes every object strictly into its Kubernetes API type,
// and runs the hintstream binary with each rendered container command and
// --check-config.
//
// It is a module of its own so that Helm and the Kubernetes API types
// never enter the main module's dependencies; `make test` runs it as a
// separate step (`go test ./...` at the repository root does not descend
// into it).
package charttest
