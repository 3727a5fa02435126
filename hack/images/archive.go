package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// recipe names this program's way of making an image: change it when a
// change of the code changes the archives it writes, so they are rebuilt.
const recipe = "edl-images/1"

const (
	annotationImageName = "io.containerd.image.name"
	annotationRefName   = "org.opencontainers.image.ref.name"
)

// normalizeName is ref fully qualified as containerd (and so kubelet) names
// it: docker.io/ for Docker Hub, library/ for its one-word names, :latest
// when no tag is given. go-containerregistry would say index.docker.io.
func normalizeName(ref string) (string, error) {
	if _, err := name.ParseReference(ref); err != nil {
		return "", fmt.Errorf("image name %q: %w", ref, err)
	}
	domain, rest, found := strings.Cut(ref, "/")
	if !found || (!strings.ContainsAny(domain, ".:") && domain != "localhost") {
		domain, rest = "docker.io", ref
	}
	if domain == "docker.io" && !strings.Contains(rest, "/") {
		rest = "library/" + rest
	}
	last := rest[strings.LastIndex(rest, "/")+1:]
	if !strings.Contains(last, ":") && !strings.Contains(last, "@") {
		rest += ":latest"
	}
	return domain + "/" + rest, nil
}

// tagOf is the tag of a normalized name ("" for a digest reference).
func tagOf(full string) string {
	last := full[strings.LastIndex(full, "/")+1:]
	if strings.Contains(last, "@") {
		return ""
	}
	_, tag, _ := strings.Cut(last, ":")
	return tag
}

// inputsKey hashes everything an archive is made from.
func inputsKey(s spec) (string, error) {
	h := sha256.New()
	j, err := json.Marshal(struct {
		Recipe, Arch string
		Spec         spec
	}{recipe, runtime.GOARCH, s})
	if err != nil {
		return "", err
	}
	h.Write(j)
	paths := []string{s.Base, s.CACerts}
	for _, f := range s.Files {
		paths = append(paths, f.Src)
	}
	for _, p := range paths {
		if p == "" {
			continue
		}
		fmt.Fprintf(h, "\n%s\n", p)
		f, err := os.Open(p) // #nosec G304 -- the files the image is asked to hold
		if os.IsNotExist(err) && p == s.CACerts {
			continue
		}
		if err != nil {
			return "", err
		}
		st, err := f.Stat()
		if err == nil {
			fmt.Fprintf(h, "%o\n", st.Mode().Perm()&0o111)
			_, err = io.Copy(h, f)
		}
		_ = f.Close()
		if err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// build writes the archive of s to out unless out is there and was made
// from the same inputs; it says whether it wrote.
func build(s spec, out string) (bool, error) {
	key, err := inputsKey(s)
	if err != nil {
		return false, err
	}
	stamp := out + ".inputs"
	old, err := os.ReadFile(stamp) // #nosec G304 -- beside the archive asked for
	if err == nil && strings.TrimSpace(string(old)) == key {
		if _, err := os.Stat(out); err == nil {
			return false, nil
		}
	}
	img, err := buildImage(s)
	if err != nil {
		return false, err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o750); err != nil {
		return false, err
	}
	tmp := out + ".tmp"
	f, err := os.Create(tmp) // #nosec G304 -- the archive asked for
	if err != nil {
		return false, err
	}
	err = writeArchive(f, img, s.Name)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, out)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return false, err
	}
	return true, os.WriteFile(stamp, []byte(key+"\n"), 0o600)
}

// writeArchive writes img as an OCI image layout in a tar to w, its index
// naming it ref.
func writeArchive(w io.Writer, img v1.Image, ref string) error {
	full, err := normalizeName(ref)
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	annotations := map[string]string{annotationImageName: full}
	if tag := tagOf(full); tag != "" {
		annotations[annotationRefName] = tag
	}
	idx := mutate.AppendManifests(empty.Index, mutate.IndexAddendum{
		Add: img,
		Descriptor: v1.Descriptor{
			Annotations: annotations,
			Platform:    &v1.Platform{OS: cf.OS, Architecture: cf.Architecture},
		},
	})
	index, err := idx.RawManifest()
	if err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	add := func(name string, size int64, r io.Reader) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: size, ModTime: epoch, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := io.Copy(tw, r)
		return err
	}
	addBytes := func(name string, b []byte) error { return add(name, int64(len(b)), bytes.NewReader(b)) }
	if err := addBytes("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return err
	}
	if err := addBytes("index.json", index); err != nil {
		return err
	}
	for _, dir := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(&tar.Header{Name: dir, Mode: 0o755, ModTime: epoch, Typeflag: tar.TypeDir}); err != nil {
			return err
		}
	}
	blob := func(h v1.Hash) string { return "blobs/" + h.Algorithm + "/" + h.Hex }
	manifest, err := img.RawManifest()
	if err != nil {
		return err
	}
	mdigest, err := img.Digest()
	if err != nil {
		return err
	}
	config, err := img.RawConfigFile()
	if err != nil {
		return err
	}
	cdigest, err := img.ConfigName()
	if err != nil {
		return err
	}
	if err := addBytes(blob(mdigest), manifest); err != nil {
		return err
	}
	if err := addBytes(blob(cdigest), config); err != nil {
		return err
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	written := map[v1.Hash]bool{}
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return err
		}
		if written[d] {
			continue
		}
		written[d] = true
		size, err := l.Size()
		if err != nil {
			return err
		}
		rc, err := l.Compressed()
		if err != nil {
			return err
		}
		err = add(blob(d), size, rc)
		_ = rc.Close()
		if err != nil {
			return fmt.Errorf("layer %s: %w", d, err)
		}
	}
	return tw.Close()
}
