package scale

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Span is what one component did after a step: how many times, and when the
// first and the last time were, since the step.
type Span struct {
	What        string
	N           int
	First, Last time.Duration
}

// auditLine is the part of a kube-apiserver audit event the timeline reads.
type auditLine struct {
	Stage     string `json:"stage"`
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	ObjectRef *struct {
		Namespace   string `json:"namespace"`
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	Received time.Time `json:"requestReceivedTimestamp"`
}

// timelineRule names one kind of request in the audit log.
type timelineRule struct {
	what  string
	agent string // the user agent's prefix
	verb  string
	// resource, with "/subresource"; web: in the web service's namespace,
	// else in the jobs'.
	resource string
	web      bool
}

// timelineRules are the steps between a web step and the settled cluster:
// the scheduler preempts trainers for the web pods and binds them, the
// ReplicaSet controller recreates the preempted trainers (their ReplicaSets
// still ask for them) and deletes those edl's scale-downs remove, and the
// scheduler binds the trainers that fit.
var timelineRules = []timelineRule{
	{"scheduler: job pods preempted (deleted)", "kube-scheduler/", "delete", "pods", false},
	{"scheduler: web pods bound", "kube-scheduler/", "create", "pods/binding", true},
	{"ReplicaSet controller: job pods created", "kube-controller-manager/", "create", "pods", false},
	{"ReplicaSet controller: job pods deleted", "kube-controller-manager/", "delete", "pods", false},
	{"scheduler: job pods bound", "kube-scheduler/", "create", "pods/binding", false},
}

// ReadTimeline counts the requests of timelineRules in each window of the
// audit log at path; windows[i] is [start, end).
func ReadTimeline(path string, windows [][2]time.Time) ([][]Span, error) {
	f, err := os.Open(path) // #nosec G304 -- the run's own audit log
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readTimeline(f, windows)
}

func readTimeline(r io.Reader, windows [][2]time.Time) ([][]Span, error) {
	out := make([][]Span, len(windows))
	for i := range out {
		for _, rule := range timelineRules {
			out[i] = append(out[i], Span{What: rule.what})
		}
	}
	scanner := bufio.NewScanner(r)
	scanner.Buffer(make([]byte, 1<<20), 1<<24)
	for scanner.Scan() {
		line := scanner.Bytes()
		if !strings.Contains(string(line), `"pods"`) {
			continue
		}
		var e auditLine
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("audit log line %q: %w", scanner.Text(), err)
		}
		if e.Stage != "ResponseComplete" || e.ObjectRef == nil {
			continue
		}
		resource := e.ObjectRef.Resource
		if e.ObjectRef.Subresource != "" {
			resource += "/" + e.ObjectRef.Subresource
		}
		web := e.ObjectRef.Namespace == WebNamespace
		for i, w := range windows {
			if e.Received.Before(w[0]) || !e.Received.Before(w[1]) {
				continue
			}
			for k, rule := range timelineRules {
				if rule.verb == e.Verb && rule.resource == resource && rule.web == web && strings.HasPrefix(e.UserAgent, rule.agent) {
					out[i][k].add(e.Received.Sub(w[0]))
				}
			}
		}
	}
	return out, scanner.Err()
}

func (s *Span) add(at time.Duration) {
	if s.N == 0 || at < s.First {
		s.First = at
	}
	s.Last = max(s.Last, at)
	s.N++
}

// scaledLine matches edl's log line of one applied scaling (logfmt).
var scaledLine = regexp.MustCompile(`^t=(\S+) .*msg="scaled trainers" .*from=(\d+) to=(\d+)`)

// edlTimeFormat is log15's logfmt time format.
const edlTimeFormat = "2006-01-02T15:04:05-0700"

// ReadScalings reads edl's log at path and returns, for each window, its
// scale-downs and scale-ups as Spans (N counts the trainers removed or
// added). The log's times are to the second.
func ReadScalings(path string, windows [][2]time.Time) ([][2]Span, error) {
	b, err := os.ReadFile(path) // #nosec G304 -- the run's own edl log
	if err != nil {
		return nil, err
	}
	out := make([][2]Span, len(windows))
	for i := range out {
		out[i] = [2]Span{{What: "edl: trainers removed (scale-downs)"}, {What: "edl: trainers added (scale-ups)"}}
	}
	for _, line := range strings.Split(string(b), "\n") {
		m := scaledLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		at, err := time.Parse(edlTimeFormat, m[1])
		if err != nil {
			return nil, fmt.Errorf("edl log line %q: %w", line, err)
		}
		from, _ := strconv.Atoi(m[2])
		to, _ := strconv.Atoi(m[3])
		for i, w := range windows {
			// The log's second may start before the window's instant.
			if at.Before(w[0].Truncate(time.Second)) || !at.Before(w[1]) {
				continue
			}
			k, n := 0, from-to
			if to > from {
				k, n = 1, to-from
			}
			before := out[i][k].N
			out[i][k].add(max(at.Sub(w[0]), 0))
			out[i][k].N = before + n
		}
	}
	return out, nil
}
