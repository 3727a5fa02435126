package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// spec is what an image is made of; main fills it from the flags.
type spec struct {
	Name       string
	Base       string // a rootfs tarball, the first layer; empty for none
	Files      []fileSpec
	Nonroot    bool
	CACerts    string
	User       string
	Entrypoint []string
	Cmd        []string
	Env        []string
	WorkingDir string
}

// fileSpec is a file of the image's own layer.
type fileSpec struct {
	Src, Dst string
	Mode     int64 // 0: from Src (0755 when executable, else 0644)
}

func parseFileSpec(v string) (fileSpec, error) {
	parts := strings.Split(v, ":")
	if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || !path.IsAbs(parts[1]) {
		return fileSpec{}, fmt.Errorf("-file %q: want SRC:DST[:MODE] with an absolute DST", v)
	}
	f := fileSpec{Src: parts[0], Dst: path.Clean(parts[1])}
	if len(parts) == 3 {
		m, err := strconv.ParseInt(parts[2], 8, 32)
		if err != nil || m <= 0 || m > 0o7777 {
			return fileSpec{}, fmt.Errorf("-file %q: mode %q is not an octal file mode", v, parts[2])
		}
		f.Mode = m
	}
	return f, nil
}

// epoch dates every entry of the image's own layer, for reproducible digests.
var epoch = time.Unix(0, 0).UTC()

const nonrootUID = 65532

const users = `root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
`

const groups = `root:x:0:
nobody:x:65534:
nonroot:x:65532:
`

// entry is one tar entry of the image's own layer.
type entry struct {
	name     string // absolute
	mode     int64
	uid, gid int
	dir      bool
	data     []byte
}

// ownEntries lists the image's own layer: its files, and the nonroot user's
// files and the CA bundle when asked for, each parent directory included.
func ownEntries(s spec) ([]entry, error) {
	var es []entry
	if s.Nonroot {
		es = append(es,
			entry{name: "/etc/passwd", mode: 0o644, data: []byte(users)},
			entry{name: "/etc/group", mode: 0o644, data: []byte(groups)},
			entry{name: "/tmp", mode: 0o1777, dir: true},
			entry{name: "/root", mode: 0o700, dir: true},
			entry{name: "/home/nonroot", mode: 0o700, dir: true, uid: nonrootUID, gid: nonrootUID},
		)
	}
	if s.CACerts != "" {
		data, err := os.ReadFile(s.CACerts)
		switch {
		case err == nil:
			es = append(es, entry{name: "/etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: data})
		case !os.IsNotExist(err):
			return nil, err
		}
	}
	for _, f := range s.Files {
		data, err := os.ReadFile(f.Src)
		if err != nil {
			return nil, err
		}
		mode := f.Mode
		if mode == 0 {
			st, err := os.Stat(f.Src)
			if err != nil {
				return nil, err
			}
			mode = 0o644
			if st.Mode()&0o111 != 0 {
				mode = 0o755
			}
		}
		es = append(es, entry{name: f.Dst, mode: mode, data: data})
	}
	return withParents(es), nil
}

// withParents adds the missing parent directories (0755, root) and sorts
// the entries by name, parents first.
func withParents(es []entry) []entry {
	seen := map[string]bool{}
	for _, e := range es {
		seen[e.name] = true
	}
	for _, e := range es {
		for d := path.Dir(e.name); d != "/" && !seen[d]; d = path.Dir(d) {
			seen[d] = true
			es = append(es, entry{name: d, mode: 0o755, dir: true})
		}
	}
	sort.SliceStable(es, func(i, j int) bool { return es[i].name < es[j].name })
	return es
}

// layerTar is the uncompressed tar of entries.
func layerTar(es []entry) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range es {
		h := &tar.Header{
			Name:    strings.TrimPrefix(e.name, "/"),
			Mode:    e.mode,
			Uid:     e.uid,
			Gid:     e.gid,
			ModTime: epoch,
			Format:  tar.FormatPAX,
		}
		if e.dir {
			h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// buildImage makes the OCI image of s.
func buildImage(s spec) (v1.Image, error) {
	var layers []v1.Layer
	if s.Base != "" {
		base := s.Base
		open := func() (io.ReadCloser, error) { return os.Open(base) } // #nosec G304 -- the base layer asked for
		l, err := tarball.LayerFromOpener(open, tarball.WithMediaType(types.OCILayer))
		if err != nil {
			return nil, fmt.Errorf("base layer %s: %w", s.Base, err)
		}
		layers = append(layers, l)
	}
	es, err := ownEntries(s)
	if err != nil {
		return nil, err
	}
	if len(es) > 0 {
		data, err := layerTar(es)
		if err != nil {
			return nil, err
		}
		l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
			tarball.WithMediaType(types.OCILayer))
		if err != nil {
			return nil, err
		}
		layers = append(layers, l)
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.AppendLayers(img, layers...)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Created = v1.Time{Time: epoch}
	cf.Config = v1.Config{
		User:       s.User,
		Entrypoint: s.Entrypoint,
		Cmd:        s.Cmd,
		Env:        withPath(s.Env),
		WorkingDir: s.WorkingDir,
	}
	return mutate.ConfigFile(img, cf)
}

// withPath is env with the usual PATH first, unless env sets PATH.
func withPath(env []string) []string {
	for _, e := range env {
		if strings.HasPrefix(e, "PATH=") {
			return env
		}
	}
	return append([]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, env...)
}
