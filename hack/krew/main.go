// Command krew packs the kubectl-edl binaries of a release for krew, the
// kubectl plugin manager: one .tar.gz archive per platform, and the
// plugin manifest edl.yaml that names each archive's URL and sha256.
// `make krew` builds the binaries and runs it:
//
//	go run ./hack/krew -version v0.1.0 -bin-dir BIN -out OUT linux/amd64 darwin/arm64 ...
//
// BIN holds <os>_<arch>/kubectl-edl (kubectl-edl.exe on windows); OUT
// receives kubectl-edl_<os>_<arch>.tar.gz and edl.yaml.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/template"
	"time"
)

//go:embed edl.yaml.tmpl
var manifestTemplate string

// platform is one archive of the manifest.
type platform struct {
	OS, Arch, URI, SHA256, Bin string
}

func main() {
	version := flag.String("version", "", "the release, as tagged (v0.1.0)")
	binDir := flag.String("bin-dir", "", "the directory of the binaries, <os>_<arch>/kubectl-edl[.exe]")
	out := flag.String("out", "", "the directory to write the archives and edl.yaml to")
	base := flag.String("url-base", "https://github.com/paddlepaddle/edl/releases/download", "where the release's archives are downloaded from; the version is appended")
	flag.Parse()
	if err := run(*version, *binDir, *out, *base, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "krew:", err)
		os.Exit(1)
	}
}

func run(version, binDir, out, base string, platforms []string) error {
	switch {
	case !strings.HasPrefix(version, "v"):
		return fmt.Errorf("invalid -version %q: a release tag such as v0.1.0", version)
	case binDir == "" || out == "":
		return fmt.Errorf("-bin-dir and -out are required")
	case len(platforms) == 0:
		return fmt.Errorf("name at least one platform, as linux/amd64")
	}
	if err := os.MkdirAll(out, 0o750); err != nil {
		return err
	}
	var ps []platform
	for _, p := range platforms {
		goos, arch, ok := strings.Cut(p, "/")
		if !ok || goos == "" || arch == "" {
			return fmt.Errorf("invalid platform %q: os/arch, as linux/amd64", p)
		}
		bin := "kubectl-edl"
		if goos == "windows" {
			bin += ".exe"
		}
		data, err := os.ReadFile(filepath.Join(binDir, goos+"_"+arch, bin)) // #nosec G304 -- the release's own build output
		if err != nil {
			return err
		}
		archive := fmt.Sprintf("kubectl-edl_%s_%s.tar.gz", goos, arch)
		packed, err := pack(bin, data)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, archive), packed, 0o600); err != nil { // #nosec G703 -- the -out directory
			return err
		}
		sum := sha256.Sum256(packed)
		ps = append(ps, platform{OS: goos, Arch: arch, Bin: bin, SHA256: hex.EncodeToString(sum[:]),
			URI: strings.TrimSuffix(base, "/") + "/" + version + "/" + archive})
	}
	var b bytes.Buffer
	t := template.Must(template.New("edl.yaml").Parse(manifestTemplate))
	if err := t.Execute(&b, struct {
		Version   string
		Platforms []platform
	}{version, ps}); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "edl.yaml"), b.Bytes(), 0o600)
}

// pack is a .tar.gz of one executable file, name, with a fixed time, so
// that the same binary gives the same archive and checksum.
func pack(name string, data []byte) ([]byte, error) {
	var b bytes.Buffer
	gz := gzip.NewWriter(&b)
	tw := tar.NewWriter(gz)
	epoch := time.Unix(0, 0).UTC()
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(data)), ModTime: epoch, Typeflag: tar.TypeReg}); err != nil {
		return nil, err
	}
	if _, err := io.Copy(tw, bytes.NewReader(data)); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
