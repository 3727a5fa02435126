package framework

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Kubectl runs the kubectl built with the control plane against it and
// returns its standard output; the error includes its standard error.
func (cp *ControlPlane) Kubectl(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(cp.binDir, "kubectl"), append([]string{"--kubeconfig=" + cp.Kubeconfig}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

// BinDir returns the directory of the binaries this control plane runs.
func (cp *ControlPlane) BinDir() string { return cp.binDir }

// LogTail returns the last n lines of one component's log (Etcd, APIServer, ...).
func (cp *ControlPlane) LogTail(component string, n int) string {
	for _, p := range cp.all() {
		if p.name == component {
			return p.tail(n)
		}
	}
	return fmt.Sprintf("(no component %q)", component)
}

// LogTails returns the last n lines of every component's log, each under a
// header naming its file.
func (cp *ControlPlane) LogTails(n int) string {
	var b strings.Builder
	for _, p := range cp.all() {
		fmt.Fprintf(&b, "--- %s (last %d lines of %s)\n%s\n", p.name, n, p.logPath, p.tail(n))
	}
	return b.String()
}

// GetSelfSigned fetches url from edl's HTTPS server, whose certificate is
// self-signed, with a bearer token unless it is empty, and returns the
// status code and body.
func GetSelfSigned(ctx context.Context, url, token string) (int, string, error) {
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // #nosec G402 -- edl's certificate is self-signed, as the ServiceMonitor's insecureSkipVerify says
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}
