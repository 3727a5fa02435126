package metrics

import (
	"regexp"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// descLabels finds a descriptor's constant and variable label names in its
// String form, the only way client_golang shows them.
var descLabels = regexp.MustCompile(`fqName: "([^"]+)".*constLabels: \{([^}]*)\}, variableLabels: \{([^}]*)\}`)

// Labels returns the label names of every metric the registry exposes,
// constant and variable, whether or not it has a series yet: what a query
// may select and group by, and what a scrape's target labels must not
// collide with.
func (m *Metrics) Labels() map[string][]string {
	ch := make(chan *prometheus.Desc)
	go func() {
		m.registry.Describe(ch)
		close(ch)
	}()
	labels := map[string][]string{}
	for d := range ch {
		match := descLabels.FindStringSubmatch(d.String())
		if match == nil {
			continue
		}
		names := []string{}
		for _, pair := range strings.Split(match[2], ",") {
			if name, _, ok := strings.Cut(pair, "="); ok {
				names = append(names, name)
			}
		}
		for _, name := range strings.Split(match[3], ",") {
			if name = strings.TrimSuffix(strings.TrimPrefix(name, "c("), ")"); name != "" {
				names = append(names, name)
			}
		}
		labels[match[1]] = append(labels[match[1]], names...)
	}
	return labels
}
