package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	log "github.com/inconshreveable/log15"
	"k8s.io/client-go/tools/leaderelection"
)

// health is what /healthz and /readyz report.
type health struct {
	// watchdog fails /healthz when this replica leads but has stopped
	// renewing its lease; nil without leader election.
	watchdog *leaderelection.HealthzAdaptor
	// synced is set once the informers' caches are filled.
	synced atomic.Bool
}

// handler serves /metrics, /healthz and /readyz.
func (h *health) handler(metrics http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", metrics)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if h.watchdog != nil {
			if err := h.watchdog.Check(r); err != nil {
				http.Error(w, "leader election: "+err.Error(), http.StatusInternalServerError)
				return
			}
		}
		_, _ = fmt.Fprintln(w, "ok")
	})
	// Ready means the caches are warm, leader or not: a standby replica is
	// ready to take over, and a rolling update must not wait for it to lead.
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !h.synced.Load() {
			http.Error(w, "informers not synced", http.StatusServiceUnavailable)
			return
		}
		_, _ = fmt.Fprintln(w, "ok")
	})
	return mux
}

// serve listens on addr and serves handler, over TLS when tlsConfig is
// not nil, until the returned stop is called. Listening happens before it
// returns, so that a taken port is one clear error.
func serve(addr string, handler http.Handler, tlsConfig *tls.Config, logger log.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on -http_addr %s: %w", addr, err)
	}
	if tlsConfig != nil {
		ln = tls.NewListener(ln, tlsConfig)
	}
	server := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := server.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("the HTTP server stopped", "err", err)
		}
	}()
	logger.Info("serving metrics and health checks", "addr", ln.Addr().String(), "tls", tlsConfig != nil)
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = server.Shutdown(ctx)
		<-done
	}, nil
}
