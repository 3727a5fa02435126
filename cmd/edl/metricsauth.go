package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"sync"
	"time"

	log "github.com/inconshreveable/log15"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// authTTL is how long a token's review is reused: Prometheus scrapes with
// the same token every few seconds, and each scrape must not cost the API
// server two requests.
const authTTL = time.Minute

// metricsAuth lets a request through only when its bearer token is one the
// API server authenticates (a TokenReview) and authorizes to get the
// request's path (a SubjectAccessReview of a non-resource URL): the
// delegated authentication and authorization of kube-rbac-proxy and of
// the Kubernetes components' own /metrics.
type metricsAuth struct {
	client kubernetes.Interface
	logger log.Logger
	now    func() time.Time

	mu        sync.Mutex
	decisions map[[sha256.Size]byte]decision
}

// decision is one review's outcome: the status code to answer with.
type decision struct {
	code    int
	expires time.Time
}

func newMetricsAuth(client kubernetes.Interface, logger log.Logger) *metricsAuth {
	return &metricsAuth{client: client, logger: logger, now: time.Now, decisions: map[[sha256.Size]byte]decision{}}
}

// wrap serves next only to authorized requests: 401 without a valid token,
// 403 for a user not allowed to get the path, 500 when the API server
// cannot answer (not remembered, so that the next scrape asks again).
func (a *metricsAuth) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || token == "" {
			http.Error(w, "Unauthorized: a bearer token is required", http.StatusUnauthorized)
			return
		}
		code := a.decide(r.Context(), token, r.URL.Path)
		if code != http.StatusOK {
			http.Error(w, http.StatusText(code), code)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (a *metricsAuth) decide(ctx context.Context, token, path string) int {
	key := sha256.Sum256([]byte(path + "\x00" + token))
	now := a.now()
	a.mu.Lock()
	d, ok := a.decisions[key]
	if len(a.decisions) > 1000 { // stale tokens of restarted scrapers
		for k, old := range a.decisions {
			if now.After(old.expires) {
				delete(a.decisions, k)
			}
		}
	}
	a.mu.Unlock()
	if ok && now.Before(d.expires) {
		return d.code
	}
	code, err := a.review(ctx, token, path)
	if err != nil {
		a.logger.Warn("cannot review a request for metrics", "path", path, "err", err)
		return http.StatusInternalServerError
	}
	a.mu.Lock()
	a.decisions[key] = decision{code: code, expires: now.Add(authTTL)}
	a.mu.Unlock()
	return code
}

// review asks the API server who the token is and whether they may get
// path.
func (a *metricsAuth) review(ctx context.Context, token, path string) (int, error) {
	tr, err := a.client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token},
	}, metav1.CreateOptions{})
	if err != nil {
		return 0, fmt.Errorf("token review: %w", err)
	}
	if !tr.Status.Authenticated {
		return http.StatusUnauthorized, nil
	}
	user := tr.Status.User
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar, err := a.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user.Username, UID: user.UID, Groups: user.Groups, Extra: extra,
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: "get"},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return 0, fmt.Errorf("subject access review: %w", err)
	}
	if !sar.Status.Allowed {
		return http.StatusForbidden, nil
	}
	return http.StatusOK, nil
}

// selfSignedTLS is a TLS configuration with a certificate edl makes for
// itself at start: scrapers that authenticate with a bearer token must not
// send it in the clear, and in-cluster scrapers (the ServiceMonitor's
// insecureSkipVerify, the kubelet's HTTPS probes) do not verify it.
func selfSignedTLS(host string, now time.Time) (*tls.Config, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
	}
	template := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: host},
		DNSNames:     []string{host},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("create the metrics server's certificate: %w", err)
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}},
	}, nil
}
