package main

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	log "github.com/inconshreveable/log15"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

// reviewingClient is an API server that knows two tokens: "prometheus",
// allowed to get /metrics, and "tenant", who is not. It counts the
// reviews, and fails them while broken is set.
type reviewingClient struct {
	*fake.Clientset
	reviews int
	broken  bool
	asked   []authorizationv1.SubjectAccessReviewSpec
}

func newReviewingClient() *reviewingClient {
	c := &reviewingClient{Clientset: fake.NewClientset()}
	c.PrependReactor("create", "tokenreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
		c.reviews++
		if c.broken {
			return true, nil, errors.New("connection refused")
		}
		tr := a.(clienttesting.CreateAction).GetObject().(*authenticationv1.TokenReview)
		switch tr.Spec.Token {
		case "prometheus":
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{
				Username: "system:serviceaccount:monitoring:prometheus", Groups: []string{"system:serviceaccounts"}}}
		case "tenant":
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "alice"}}
		}
		return true, tr, nil
	})
	c.PrependReactor("create", "subjectaccessreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
		sar := a.(clienttesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		c.asked = append(c.asked, sar.Spec)
		sar.Status.Allowed = sar.Spec.User == "system:serviceaccount:monitoring:prometheus" &&
			sar.Spec.NonResourceAttributes != nil && sar.Spec.NonResourceAttributes.Path == "/metrics" && sar.Spec.NonResourceAttributes.Verb == "get"
		return true, sar, nil
	})
	return c
}

func getWithToken(t *testing.T, h http.Handler, path, token string) int {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	h.ServeHTTP(rec, req)
	return rec.Code
}

// TestSecureMetricsAuthenticateAndAuthorize: /metrics answers only a token
// the API server authenticates and authorizes to get /metrics; the probes
// stay open to the kubelet, which sends no token.
func TestSecureMetricsAuthenticateAndAuthorize(t *testing.T) {
	client := newReviewingClient()
	logger := log.New()
	logger.SetHandler(log.DiscardHandler())
	auth := newMetricsAuth(client, logger)
	h := &health{}
	h.synced.Store(true)
	handler := h.handler(auth.wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "edl_leader 1\n") })))

	assert.Equal(t, http.StatusUnauthorized, getWithToken(t, handler, "/metrics", ""), "no token")
	assert.Equal(t, http.StatusUnauthorized, getWithToken(t, handler, "/metrics", "forged"), "a token the API server does not know")
	assert.Equal(t, http.StatusForbidden, getWithToken(t, handler, "/metrics", "tenant"), "a user without get on /metrics")
	assert.Equal(t, http.StatusOK, getWithToken(t, handler, "/metrics", "prometheus"))
	assert.Equal(t, http.StatusOK, getWithToken(t, handler, "/healthz", ""), "the liveness probe")
	assert.Equal(t, http.StatusOK, getWithToken(t, handler, "/readyz", ""), "the readiness probe")

	require.NotEmpty(t, client.asked)
	last := client.asked[len(client.asked)-1]
	assert.Equal(t, []string{"system:serviceaccounts"}, last.Groups, "the token's groups are reviewed with the user")

	// A scrape every few seconds reuses the review for a minute.
	reviews := client.reviews
	assert.Equal(t, http.StatusOK, getWithToken(t, handler, "/metrics", "prometheus"))
	assert.Equal(t, http.StatusForbidden, getWithToken(t, handler, "/metrics", "tenant"))
	assert.Equal(t, reviews, client.reviews, "no new review within the TTL")
	now := time.Now().Add(authTTL + time.Second)
	auth.now = func() time.Time { return now }
	assert.Equal(t, http.StatusOK, getWithToken(t, handler, "/metrics", "prometheus"))
	assert.Equal(t, reviews+1, client.reviews, "reviewed again after the TTL")

	// An API server that cannot answer is a 500, not remembered.
	client.broken = true
	assert.Equal(t, http.StatusInternalServerError, getWithToken(t, handler, "/metrics", "new-token"))
	client.broken = false
	assert.Equal(t, http.StatusUnauthorized, getWithToken(t, handler, "/metrics", "new-token"))
}

// TestSecureMetricsServeTLS: with -secure_metrics the server speaks TLS
// only, with the certificate edl made for itself.
func TestSecureMetricsServeTLS(t *testing.T) {
	tlsConfig, err := selfSignedTLS("edl-test", time.Now())
	require.NoError(t, err)
	logger := log.New()
	logger.SetHandler(log.DiscardHandler())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	stop, err := serve(addr, (&health{}).handler(http.NotFoundHandler()), tlsConfig, logger)
	require.NoError(t, err)
	defer stop()

	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // #nosec G402 -- the certificate is self-signed
	resp, err := client.Get("https://" + addr + "/healthz")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	require.NotNil(t, resp.TLS)
	assert.Equal(t, "edl-test", resp.TLS.PeerCertificates[0].Subject.CommonName)

	resp, err = client.Get("http://" + addr + "/healthz")
	if err == nil {
		_ = resp.Body.Close()
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "plain HTTP is refused")
	}
}
