// Package install checks EDL's install artifacts without a cluster: the
// kustomizations render what the operations guide says (the API apart from
// the controller, an overlay that moves everything to another namespace),
// the copies under config/ are current, and the image is the release's.
package install
