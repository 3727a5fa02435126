package reconnect

import (
	"io"
	"net/http"
	"sync/atomic"
	"time"

	log "github.com/inconshreveable/log15"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
)

// DefaultInterval is how often a waiting request tries the server again.
const DefaultInterval = time.Second

// Configure makes cfg's GET requests wait while the server refuses
// connections or answers 503 Service Unavailable (as it does while it
// starts), trying again every interval until it answers or the request's
// context ends. The logger hears when the server goes away and when it is
// back, once each, for every client made from cfg.
func Configure(cfg *rest.Config, interval time.Duration, logger log.Logger) {
	s := &server{host: cfg.Host, log: logger}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return &transport{next: rt, interval: interval, server: s}
	})
}

// server is what the transports of one configuration know of the server.
type server struct {
	host string
	log  log.Logger
	// downSince is when the server first failed to answer, in Unix
	// nanoseconds; 0 while it answers.
	downSince atomic.Int64
}

func (s *server) down(why string) {
	if s.downSince.CompareAndSwap(0, time.Now().UnixNano()) {
		s.log.Warn("the API server is unavailable; lists and watches wait for it", "host", s.host, "err", why)
	}
}

func (s *server) up() {
	if s.downSince.Load() == 0 {
		return
	}
	if since := s.downSince.Swap(0); since != 0 {
		s.log.Info("the API server answers again", "host", s.host, "after", time.Since(time.Unix(0, since)).Round(time.Second))
	}
}

// transport is the waiting RoundTripper Configure installs.
type transport struct {
	next     http.RoundTripper
	interval time.Duration
	server   *server
}

// RoundTrip sends req; a GET the server refuses or answers with 503 is sent
// again every interval. A refused connection carried no request and a GET
// changes nothing, so sending it again is safe; a GET has no body to rewind.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	for {
		resp, err := t.next.RoundTrip(req)
		why := unavailable(resp, err)
		if req.Method != http.MethodGet || why == "" {
			if err == nil && resp.StatusCode != http.StatusServiceUnavailable {
				t.server.up()
			}
			return resp, err
		}
		if resp != nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			_ = resp.Body.Close()
		}
		t.server.down(why)
		select {
		case <-req.Context().Done():
			if err == nil {
				err = req.Context().Err()
			}
			return nil, err
		case <-time.After(t.interval):
		}
	}
}

// unavailable says why the server did not serve the request, or "" when it
// did (whatever it answered).
func unavailable(resp *http.Response, err error) string {
	switch {
	case err != nil && utilnet.IsConnectionRefused(err):
		return err.Error()
	case err == nil && resp.StatusCode == http.StatusServiceUnavailable:
		return resp.Status
	default:
		return ""
	}
}

// WrappedRoundTripper lets client-go find the transport underneath.
func (t *transport) WrappedRoundTripper() http.RoundTripper { return t.next }
