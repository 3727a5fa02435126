// Command images writes container images as OCI archives that
// `ctr -n k8s.io images import` loads into a containerd, without a registry
// and without Docker. hack/images.sh (`make images`) runs it for EDL's
// controller, the pause image and the example trainer; it takes any image of
// the same shape, such as a static binary with its name and entrypoint:
//
//	go run ./hack/images -out coredns.oci.tar -name registry.k8s.io/coredns/coredns:v1.12.1 \
//	    -file /path/to/coredns:/coredns:0755 -nonroot -user 65532:65532 -entrypoint '["/coredns"]'
//
// An image is an optional base layer (-base, a rootfs tarball, gzipped or
// not) and one layer of its own: the -file files, with /etc/passwd,
// /etc/group, /tmp and /home/nonroot for the nonroot user 65532 (-nonroot,
// as distroless's static:nonroot has them) and the CA certificates of -ca-certs
// when that file exists. Its config has -user, -entrypoint, -cmd, -env and
// -workdir, for linux on the machine's architecture. Every file and
// directory of that layer is owned by root (the nonroot home by 65532) and
// dated the epoch, so the same inputs give the same digests.
//
// The archive is an OCI image layout in a tar (oci-layout, index.json,
// blobs/sha256/...): index.json's one manifest carries the annotation
// io.containerd.image.name with the name fully qualified as containerd
// spells it (paddlepaddle/edl-controller:v0.1.0 is
// docker.io/paddlepaddle/edl-controller:v0.1.0), which ctr import gives the
// image, and org.opencontainers.image.ref.name with the tag. It is written
// to a temporary file and renamed; beside it, <out>.inputs holds a hash of
// every input (this program's recipe, the flags, the files' contents), and
// a run whose inputs hash the same leaves the archive alone.
//
// Why github.com/google/go-containerregistry: the machines this runs on have
// no Docker engine, and buildah and umoci want a container runtime or
// storage setup of their own (buildah) or are C and Go tools packaged
// apart from the Go toolchain and little maintained (umoci); a Go library is
// fetched through the Go module proxy like the rest of the project, and
// go-containerregistry is the well-kept one (ko, crane and kaniko are built
// on it). Its mutate, empty and tarball packages build the image; this
// program writes the layout itself so that a large layer is read once,
// straight into the archive.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
)

// fileList is a repeated -file flag: SRC:DST[:MODE].
type fileList []fileSpec

func (f *fileList) String() string { return fmt.Sprint(*f) }

func (f *fileList) Set(v string) error {
	s, err := parseFileSpec(v)
	if err != nil {
		return err
	}
	*f = append(*f, s)
	return nil
}

// stringList is a repeated flag.
type stringList []string

func (s *stringList) String() string { return strings.Join(*s, ",") }

func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// jsonList is a flag holding a JSON array of strings (an entrypoint, a cmd).
type jsonList struct{ v *[]string }

func (j jsonList) String() string {
	if j.v == nil {
		return ""
	}
	b, _ := json.Marshal(*j.v)
	return string(b)
}

func (j jsonList) Set(v string) error { return json.Unmarshal([]byte(v), j.v) }

func main() {
	var s spec
	var files fileList
	var env stringList
	out := flag.String("out", "", "the archive to write (required)")
	flag.StringVar(&s.Name, "name", "", "the image's name, e.g. paddlepaddle/edl-controller:v0.1.0 (required)")
	flag.StringVar(&s.Base, "base", "", "a rootfs tarball (.tar or .tar.gz) to use as the first layer")
	flag.Var(&files, "file", "SRC:DST[:MODE] a file to add (mode in octal; default 0755 when SRC is executable, else 0644); repeatable")
	flag.BoolVar(&s.Nonroot, "nonroot", false, "add /etc/passwd and /etc/group with root, nobody and nonroot (65532), /tmp and /home/nonroot")
	flag.StringVar(&s.CACerts, "ca-certs", "", "a CA bundle to add as /etc/ssl/certs/ca-certificates.crt when the file exists")
	flag.StringVar(&s.User, "user", "", "the config's user, e.g. 65532:65532")
	flag.Var(jsonList{&s.Entrypoint}, "entrypoint", `the config's entrypoint, a JSON array: '["/usr/local/bin/edl"]'`)
	flag.Var(jsonList{&s.Cmd}, "cmd", `the config's cmd, a JSON array: '["-log_level","info"]'`)
	flag.Var(&env, "env", "KEY=VALUE in the config's environment; repeatable")
	flag.StringVar(&s.WorkingDir, "workdir", "", "the config's working directory")
	flag.Parse()
	s.Files, s.Env = files, env
	if *out == "" || s.Name == "" || flag.NArg() != 0 {
		flag.Usage()
		os.Exit(2)
	}
	built, err := build(s, *out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
	name, _ := normalizeName(s.Name)
	if built {
		fmt.Printf("%s: wrote %s\n", name, *out)
	} else {
		fmt.Printf("%s: %s is up to date\n", name, *out)
	}
}
