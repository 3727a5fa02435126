// Package kwok holds the kwok Stage definitions that drive the fake nodes and
// pods of EDL's test control plane, embedded so that the test framework and
// the local cluster find them wherever they run. README.md says what each
// stage does.
package kwok
