// Package horovod is EDL's Horovod framework: horovodrun, the launcher, in
// the master pod, over the trainers a host-discovery file lists (each
// trainer runs its image's command, an sshd). The job ends with its
// launcher, and a trainer leaves the file before its pod goes.
package horovod
