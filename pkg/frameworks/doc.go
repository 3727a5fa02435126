// Package frameworks names EDL's frameworks: [For] is the one a job's
// spec.framework selects. Adding a framework adds its package under
// pkg/framework and one line here.
package frameworks
