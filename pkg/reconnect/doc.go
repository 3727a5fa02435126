// Package reconnect keeps an informer's list and watch requests waiting
// while the API server is unavailable, instead of failing them.
//
// client-go's reflectors back off exponentially, with jitter, up to 30–60 s,
// when a list or watch fails, and shared informers do not let the caller
// change that backoff (kubernetes/kubernetes#136943). After an API-server
// restart the controller would sit idle for up to a minute. A GET that waits
// in the transport, refused or answered 503 while the server starts, and is
// sent again once a second never reaches the reflector as an error, so the
// informers resume within a second or two of the server's return. Writes
// are never sent again here: they fail at once and go back to the work
// queue.
package reconnect
