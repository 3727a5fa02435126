// Package config is edl's configuration file: EDLConfiguration
// (edl.paddlepaddle.org/v1alpha1), a versioned object in the style of the
// Kubernetes components' configs, read with strict decoding so that a
// misspelt field is one line naming it. Every field is also a flag of edl
// (Fields maps one to the other): the file sets the options, the flags given
// on the command line override it.
//
// The leader publishes the configuration it runs with — every field filled
// in — as annotations of its Lease (Publish, Published), so that `kubectl
// edl explain` plans with the controller's own options without being told
// them.
package config
