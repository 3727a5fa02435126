// Package integration tests EDL against a real Kubernetes control plane with
// kwok nodes (see test/framework). Run `make controlplane` once first; the
// tests fail, rather than skip, without the binaries.
package integration
