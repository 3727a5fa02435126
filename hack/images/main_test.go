package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// extract unpacks the tar archive into dir.
func extract(t *testing.T, archive, dir string) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// layerFiles lists a layer's entries by name.
func layerFiles(t *testing.T, rc io.ReadCloser) map[string]*tar.Header {
	t.Helper()
	defer rc.Close()
	files := map[string]*tar.Header{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		files[strings.TrimSuffix(h.Name, "/")] = h
	}
}

// controllerSpec is the controller image's recipe (hack/images.sh), with a
// stand-in for the edl binary.
func controllerSpec(t *testing.T, dir string) spec {
	t.Helper()
	bin := filepath.Join(dir, "edl")
	if err := os.WriteFile(bin, []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	certs := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(certs, []byte("-----BEGIN CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return spec{
		Name:       "paddlepaddle/edl-controller:v0.1.0",
		Files:      []fileSpec{{Src: bin, Dst: "/usr/local/bin/edl"}},
		Nonroot:    true,
		CACerts:    certs,
		User:       "65532:65532",
		Entrypoint: []string{"/usr/local/bin/edl"},
		Cmd:        []string{"-log_level", "info"},
	}
}

func TestControllerArchive(t *testing.T) {
	dir := t.TempDir()
	s := controllerSpec(t, dir)
	out := filepath.Join(dir, "images", "edl-controller.oci.tar")
	built, err := build(s, out)
	if err != nil || !built {
		t.Fatalf("build: %v, built %v", err, built)
	}
	unpacked := filepath.Join(dir, "layout")
	extract(t, out, unpacked)
	idx, err := layout.ImageIndexFromPath(unpacked)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 {
		t.Fatalf("index has %d manifests, want 1", len(im.Manifests))
	}
	d := im.Manifests[0]
	if got := d.Annotations[annotationImageName]; got != "docker.io/paddlepaddle/edl-controller:v0.1.0" {
		t.Errorf("%s = %q", annotationImageName, got)
	}
	if got := d.Annotations[annotationRefName]; got != "v0.1.0" {
		t.Errorf("%s = %q", annotationRefName, got)
	}
	if d.Platform == nil || d.Platform.OS != "linux" || d.Platform.Architecture != runtime.GOARCH {
		t.Errorf("platform %+v", d.Platform)
	}
	img, err := idx.Image(d.Digest)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != "65532:65532" {
		t.Errorf("user %q", cf.Config.User)
	}
	if !reflect.DeepEqual(cf.Config.Entrypoint, []string{"/usr/local/bin/edl"}) {
		t.Errorf("entrypoint %q", cf.Config.Entrypoint)
	}
	if !reflect.DeepEqual(cf.Config.Cmd, []string{"-log_level", "info"}) {
		t.Errorf("cmd %q", cf.Config.Cmd)
	}
	if cf.OS != "linux" || cf.Architecture != runtime.GOARCH {
		t.Errorf("config for %s/%s", cf.OS, cf.Architecture)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %d, %v", len(layers), err)
	}
	mt, _ := layers[0].MediaType()
	if mt != "application/vnd.oci.image.layer.v1.tar+gzip" {
		t.Errorf("layer media type %s", mt)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	files := layerFiles(t, rc)
	for name, mode := range map[string]int64{
		"usr/local/bin/edl": 0o755, "etc/passwd": 0o644, "etc/group": 0o644,
		"etc/ssl/certs/ca-certificates.crt": 0o644, "tmp": 0o1777, "home/nonroot": 0o700, "usr/local/bin": 0o755,
	} {
		h, ok := files[name]
		if !ok {
			t.Errorf("layer lacks %s", name)
			continue
		}
		if h.Mode != mode || h.Uid != 0 && name != "home/nonroot" || !h.ModTime.Equal(epoch) {
			t.Errorf("%s: mode %o uid %d mtime %v", name, h.Mode, h.Uid, h.ModTime)
		}
	}
	if h := files["home/nonroot"]; h != nil && (h.Uid != nonrootUID || h.Gid != nonrootUID) {
		t.Errorf("home/nonroot owned by %d:%d", h.Uid, h.Gid)
	}
}

func TestRebuiltOnlyWhenInputsChange(t *testing.T) {
	dir := t.TempDir()
	s := controllerSpec(t, dir)
	out := filepath.Join(dir, "a.oci.tar")
	if built, err := build(s, out); err != nil || !built {
		t.Fatalf("first build: %v, built %v", err, built)
	}
	first, _ := os.ReadFile(out)
	if built, err := build(s, out); err != nil || built {
		t.Fatalf("same inputs: %v, built %v", err, built)
	}
	// The same inputs written again give the same bytes (reproducible).
	if err := os.Remove(out + ".inputs"); err != nil {
		t.Fatal(err)
	}
	if built, err := build(s, out); err != nil || !built {
		t.Fatalf("without a stamp: %v, built %v", err, built)
	}
	again, _ := os.ReadFile(out)
	if !bytes.Equal(first, again) {
		t.Error("the same inputs wrote a different archive")
	}
	if err := os.WriteFile(s.Files[0].Src, []byte("#!/bin/false\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if built, err := build(s, out); err != nil || !built {
		t.Fatalf("changed binary: %v, built %v", err, built)
	}
	s.Cmd = []string{"-log_level", "debug"}
	if built, err := build(s, out); err != nil || !built {
		t.Fatalf("changed cmd: %v, built %v", err, built)
	}
}

func TestBaseLayerAndMissingCACerts(t *testing.T) {
	dir := t.TempDir()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	body := []byte("print('hi')\n")
	if err := tw.WriteHeader(&tar.Header{Name: "./usr/bin/python3", Mode: 0o755, Size: int64(len(body))}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(body); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(dir, "rootfs.tar.gz")
	if err := os.WriteFile(base, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "train.py")
	if err := os.WriteFile(script, body, 0o644); err != nil {
		t.Fatal(err)
	}
	s := spec{
		Name:       "localhost:5000/trainer",
		Base:       base,
		Files:      []fileSpec{{Src: script, Dst: "/workspace/train.py"}},
		CACerts:    filepath.Join(dir, "absent.crt"),
		WorkingDir: "/workspace",
	}
	img, err := buildImage(s)
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 2 {
		t.Fatalf("layers %d, %v", len(layers), err)
	}
	// The gzipped base is used as it is, not compressed again.
	size, _ := layers[0].Size()
	if size != int64(buf.Len()) {
		t.Errorf("base layer of %d bytes, the file has %d", size, buf.Len())
	}
	rc, _ := layers[1].Uncompressed()
	files := layerFiles(t, rc)
	if h := files["workspace/train.py"]; h == nil || h.Mode != 0o644 {
		t.Errorf("train.py: %+v", h)
	}
	if _, ok := files["etc/ssl/certs/ca-certificates.crt"]; ok {
		t.Error("a missing CA bundle was added")
	}
	cf, _ := img.ConfigFile()
	if cf.Config.WorkingDir != "/workspace" || len(cf.Config.Env) != 1 || !strings.HasPrefix(cf.Config.Env[0], "PATH=") {
		t.Errorf("config %+v", cf.Config)
	}
	var out bytes.Buffer
	if err := writeArchive(&out, img, s.Name); err != nil {
		t.Fatal(err)
	}
}

func TestNormalizeName(t *testing.T) {
	for in, want := range map[string]string{
		"paddlepaddle/edl-controller:v0.1.0": "docker.io/paddlepaddle/edl-controller:v0.1.0",
		"busybox":                            "docker.io/library/busybox:latest",
		"registry.k8s.io/pause:3.10.2":       "registry.k8s.io/pause:3.10.2",
		"registry.k8s.io/coredns/coredns":    "registry.k8s.io/coredns/coredns:latest",
		"localhost:5000/trainer":             "localhost:5000/trainer:latest",
		"docker.io/library/python:3":         "docker.io/library/python:3",
	} {
		got, err := normalizeName(in)
		if err != nil || got != want {
			t.Errorf("normalizeName(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := normalizeName("UPPER/case:x"); err == nil {
		t.Error("an invalid name was accepted")
	}
}

func TestParseFileSpec(t *testing.T) {
	f, err := parseFileSpec("bin/edl:/usr/local/bin/edl:0755")
	if err != nil || f.Src != "bin/edl" || f.Dst != "/usr/local/bin/edl" || f.Mode != 0o755 {
		t.Errorf("got %+v, %v", f, err)
	}
	for _, bad := range []string{"edl", "edl:relative", "edl:/x:9z", ":/x"} {
		if _, err := parseFileSpec(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
