package framework

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// pki holds the paths of the credentials a control plane runs with, all
// generated into one directory at first start and reused on restart.
type pki struct {
	caCert, caKey           string
	servingCert, servingKey string
	saKey, saPub            string
	// client certificates, by user
	clients map[string]clientCert
}

type clientCert struct{ cert, key string }

// frontProxyName is the common name kube-apiserver accepts request headers from.
const frontProxyName = "front-proxy-client"

// Users of the control plane, each with a client certificate.
const (
	userAdmin             = "admin"
	userControllerManager = "controller-manager"
	userScheduler         = "scheduler"
	// userFrontProxy is how kube-apiserver authenticates to aggregated API
	// servers; configuring it also gives the controller manager and the
	// scheduler the request-header CA they look up at start.
	userFrontProxy = "front-proxy"
)

// newPKI writes a CA, a serving certificate for 127.0.0.1, a service account
// key pair and client certificates into dir. ECDSA keeps this under 100 ms.
func newPKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := &pki{
		caCert:      filepath.Join(dir, "ca.crt"),
		caKey:       filepath.Join(dir, "ca.key"),
		servingCert: filepath.Join(dir, "serving.crt"),
		servingKey:  filepath.Join(dir, "serving.key"),
		saKey:       filepath.Join(dir, "sa.key"),
		saPub:       filepath.Join(dir, "sa.pub"),
		clients:     map[string]clientCert{},
	}
	now := time.Now().Add(-time.Hour)
	notAfter := now.Add(10 * 365 * 24 * time.Hour)

	caKey, err := newKey()
	if err != nil {
		return nil, err
	}
	caTemplate := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "edl-test-ca"},
		NotBefore:             now,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, caKey.Public(), caKey)
	if err != nil {
		return nil, fmt.Errorf("create CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	if err := writeCert(p.caCert, caDER); err != nil {
		return nil, err
	}
	if err := writeKey(p.caKey, caKey); err != nil {
		return nil, err
	}

	serial := int64(2)
	issue := func(certPath, keyPath string, tmpl *x509.Certificate) error {
		key, err := newKey()
		if err != nil {
			return err
		}
		tmpl.SerialNumber = big.NewInt(serial)
		serial++
		tmpl.NotBefore, tmpl.NotAfter = now, notAfter
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
		if err != nil {
			return fmt.Errorf("create certificate %s: %w", tmpl.Subject.CommonName, err)
		}
		if err := writeCert(certPath, der); err != nil {
			return err
		}
		return writeKey(keyPath, key)
	}

	// One serving certificate for every component: all listen on 127.0.0.1,
	// and in-cluster clients would dial the kubernetes service IP.
	err = issue(p.servingCert, p.servingKey, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(serviceIP), net.ParseIP(RealNodeIP)},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
	})
	if err != nil {
		return nil, err
	}

	// The API server's bootstrap RBAC policy knows the component users by
	// these names; the admin is a member of system:masters.
	users := map[string]pkix.Name{
		userAdmin:             {CommonName: "edl-admin", Organization: []string{"system:masters"}},
		userControllerManager: {CommonName: "system:kube-controller-manager"},
		userScheduler:         {CommonName: "system:kube-scheduler"},
		userFrontProxy:        {CommonName: frontProxyName},
	}
	for user, subject := range users {
		c := clientCert{cert: filepath.Join(dir, user+".crt"), key: filepath.Join(dir, user+".key")}
		err := issue(c.cert, c.key, &x509.Certificate{
			Subject:     subject,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		})
		if err != nil {
			return nil, err
		}
		p.clients[user] = c
	}

	saKey, err := newKey()
	if err != nil {
		return nil, err
	}
	if err := writeKey(p.saKey, saKey); err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(saKey.Public())
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(p.saPub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o600); err != nil {
		return nil, err
	}
	return p, nil
}

func newKey() (*ecdsa.PrivateKey, error) {
	return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
}

func writeCert(path string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
}

func writeKey(path string, key crypto.Signer) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600)
}

// writeKubeconfig writes a kubeconfig for user that trusts the CA and
// authenticates with the user's client certificate.
func (p *pki) writeKubeconfig(path, server, user string) error {
	c, ok := p.clients[user]
	if !ok {
		return fmt.Errorf("no client certificate for user %q", user)
	}
	const name = "edl"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthority: p.caCert}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificate: c.cert, ClientKey: c.key}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: user}
	cfg.CurrentContext = name
	return clientcmd.WriteToFile(*cfg, path)
}
