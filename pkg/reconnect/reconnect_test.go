package reconnect

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	log "github.com/inconshreveable/log15"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

var errRefused = &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}

// errAnswer503 stands for a 503 answer in a script.
var errAnswer503 = errors.New("503")

// script is a RoundTripper that fails the first calls with the given errors
// (errAnswer503: answers 503) and then answers 200.
type script struct {
	errs  []error
	calls atomic.Int32
}

func (s *script) RoundTrip(*http.Request) (*http.Response, error) {
	n := int(s.calls.Add(1))
	switch {
	case n <= len(s.errs) && s.errs[n-1] == errAnswer503:
		return &http.Response{StatusCode: http.StatusServiceUnavailable, Status: "503 Service Unavailable", Body: io.NopCloser(strings.NewReader("starting"))}, nil
	case n <= len(s.errs):
		return nil, s.errs[n-1]
	}
	return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader("ok"))}, nil
}

func newLogger(buf *bytes.Buffer) log.Logger {
	logger := log.New()
	logger.SetHandler(log.StreamHandler(buf, log.LogfmtFormat()))
	return logger
}

func TestRoundTrip(t *testing.T) {
	for _, c := range []struct {
		name      string
		method    string
		errs      []error
		wantCalls int32
		wantErr   error
		wantLog   []string
	}{
		{"a GET waits for a refusing server", http.MethodGet, []error{errRefused, errRefused}, 3, nil,
			[]string{`lvl=warn msg="the API server is unavailable; lists and watches wait for it"`, `lvl=info msg="the API server answers again"`}},
		{"a GET waits for a starting server", http.MethodGet, []error{errRefused, errAnswer503, errAnswer503}, 4, nil,
			[]string{`lvl=warn msg="the API server is unavailable; lists and watches wait for it"`, `lvl=info msg="the API server answers again"`}},
		{"a GET that is answered is sent once", http.MethodGet, nil, 1, nil, nil},
		{"a write is never sent again", http.MethodPost, []error{errRefused}, 1, errRefused, nil},
		{"a patch is never sent again", http.MethodPatch, []error{errRefused}, 1, errRefused, nil},
		{"other errors are the caller's", http.MethodGet, []error{io.EOF}, 1, io.EOF, nil},
		{"a write answered 503 is the caller's", http.MethodPut, []error{errAnswer503}, 1, nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			next := &script{errs: c.errs}
			var logged bytes.Buffer
			rt := &transport{next: next, interval: time.Millisecond, server: &server{log: newLogger(&logged)}}
			req, err := http.NewRequest(c.method, "https://apiserver/api", nil)
			require.NoError(t, err)
			resp, err := rt.RoundTrip(req)
			assert.Equal(t, c.wantCalls, next.calls.Load())
			if c.wantErr != nil {
				assert.ErrorIs(t, err, c.wantErr)
				assert.Nil(t, resp)
			} else {
				require.NoError(t, err)
				assert.Equal(t, next.calls.Load() > int32(len(c.errs)), resp.StatusCode == http.StatusOK, "the last answer is passed on")
			}
			lines := strings.Split(strings.TrimSpace(logged.String()), "\n")
			if len(c.wantLog) == 0 {
				assert.Empty(t, logged.String())
				return
			}
			require.Len(t, lines, len(c.wantLog), logged.String())
			for i, want := range c.wantLog {
				assert.Contains(t, lines[i], want)
			}
		})
	}
}

// TestRoundTripEndsWithTheContext: a GET waiting for a server that never
// comes back returns the refusal once its context ends.
func TestRoundTripEndsWithTheContext(t *testing.T) {
	next := &script{errs: make([]error, 1<<20)}
	for i := range next.errs {
		next.errs[i] = errRefused
	}
	var logged bytes.Buffer
	rt := &transport{next: next, interval: time.Millisecond, server: &server{log: newLogger(&logged)}}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://apiserver/api", nil)
	require.NoError(t, err)
	_, err = rt.RoundTrip(req)
	assert.ErrorIs(t, err, syscall.ECONNREFUSED)
	assert.Greater(t, next.calls.Load(), int32(1), "tried again while waiting")
	assert.Equal(t, 1, strings.Count(logged.String(), "is unavailable"), "one warning per outage, not per try")
}

// TestConfigureWaitsForTheServerToListen: a client-go request made while
// nothing listens on the server's address is answered once a server starts
// listening there.
func TestConfigureWaitsForTheServerToListen(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close()) // connections to addr are refused now

	cfg := &rest.Config{Host: "http://" + addr}
	var logged bytes.Buffer
	Configure(cfg, 20*time.Millisecond, newLogger(&logged))
	client, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)

	answered := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		answered <- client.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Error()
	}()
	time.Sleep(200 * time.Millisecond)
	select {
	case err := <-answered:
		t.Fatalf("answered while nothing listened: %v", err)
	default:
	}

	l, err = net.Listen("tcp", addr)
	require.NoError(t, err)
	server := &http.Server{ReadHeaderTimeout: time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"gitVersion":"v1.36.3"}`))
	})}
	go func() { _ = server.Serve(l) }()
	defer server.Close()

	select {
	case err := <-answered:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("the request never reached the server")
	}
	assert.Contains(t, logged.String(), "the API server answers again")
}
