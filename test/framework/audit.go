package framework

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// AuditPolicy is a kube-apiserver audit policy (--audit-policy-file) that
// logs every request's metadata — verb, resource, user agent, time — once
// its response is complete (for a watch: once it started). kube-apiserver's
// request metrics carry no user agent; its audit events do, which is how the
// tests tell edl's requests from everyone else's.
const AuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
`

// EDLUserAgentPrefix starts the user agent of every request edl's clients
// send (edl/<version>); its leader-election client adds "(leader-election)".
const EDLUserAgentPrefix = "edl/"

// AuditEvent is the part of an audit.k8s.io/v1 Event the tests read.
type AuditEvent struct {
	Stage     string     `json:"stage"`
	Verb      string     `json:"verb"`
	UserAgent string     `json:"userAgent"`
	ObjectRef *ObjectRef `json:"objectRef"`
	Received  time.Time  `json:"requestReceivedTimestamp"`
	// Response is the response's status; a watch's first stage has none.
	Response *ResponseStatus `json:"responseStatus"`
}

// ResponseStatus is the part of an audited response's status the tests read.
type ResponseStatus struct {
	Code int `json:"code"`
}

// Succeeded says whether the API server answered the request with a 2xx
// code: a write refused (a 409 conflict, a 422) changed nothing.
func (e AuditEvent) Succeeded() bool {
	return e.Response != nil && e.Response.Code >= 200 && e.Response.Code < 300
}

// ObjectRef is the object an audited request was about.
type ObjectRef struct {
	Namespace   string `json:"namespace"`
	Name        string `json:"name"`
	Resource    string `json:"resource"`
	Subresource string `json:"subresource"`
}

// Resource is the request's resource, with its subresource after a slash
// ("trainingjobs/status"), or "-" for a request on no resource.
func (e AuditEvent) Resource() string {
	if e.ObjectRef == nil {
		return "-"
	}
	if e.ObjectRef.Subresource != "" {
		return e.ObjectRef.Resource + "/" + e.ObjectRef.Subresource
	}
	return e.ObjectRef.Resource
}

// Write says whether the request changes state.
func (e AuditEvent) Write() bool {
	switch e.Verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

// LeaderElection says whether edl's leader-election client sent the request.
func (e AuditEvent) LeaderElection() bool {
	return strings.Contains(e.UserAgent, "(leader-election)")
}

// ReadEDLRequests reads the requests that edl (user agent edl/<version>)
// sent between from and to (a zero time bounds nothing) from a
// kube-apiserver audit log, one event per request: a watch's first stage,
// every other request's last.
func ReadEDLRequests(r io.Reader, from, to time.Time) ([]AuditEvent, error) {
	var out []AuditEvent
	scanner := bufio.NewScanner(r)
	scanner.Buffer(make([]byte, 1<<20), 1<<24)
	for scanner.Scan() {
		line := scanner.Bytes()
		// Most lines are other clients'; a look for the prefix before the
		// JSON decoding keeps a large log quick to read.
		if !strings.Contains(string(line), `"userAgent":"`+EDLUserAgentPrefix) {
			continue
		}
		var e AuditEvent
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("audit log line %q: %w", scanner.Text(), err)
		}
		if !strings.HasPrefix(e.UserAgent, EDLUserAgentPrefix) ||
			(!from.IsZero() && e.Received.Before(from)) || (!to.IsZero() && e.Received.After(to)) {
			continue
		}
		if (e.Verb == "watch" && e.Stage == "ResponseStarted") || (e.Verb != "watch" && e.Stage == "ResponseComplete") {
			out = append(out, e)
		}
	}
	return out, scanner.Err()
}

// EDLRequests is ReadEDLRequests on the audit log at path.
func EDLRequests(path string, from, to time.Time) ([]AuditEvent, error) {
	f, err := os.Open(path) // #nosec G304 -- the caller's own audit log
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadEDLRequests(f, from, to)
}
