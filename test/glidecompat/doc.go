// Package glidecompat tests glide-compat.sh, the original EDL's build steps
// (glide install, then go build) on Go modules. The tests run the script in a
// temporary copy of the repository, so that the vendor directory it writes
// never reaches the checkout.
package glidecompat
