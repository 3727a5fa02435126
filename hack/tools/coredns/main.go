// Command coredns is CoreDNS with only the plugins a local cluster's DNS
// needs: bind keeps it to the node's address, the kubernetes plugin answers
// for cluster.local (Services and their endpoints), errors and log report,
// health and ready serve probes, cache keeps answers, and forward sends
// other names on, where a cluster has somewhere to send them.
// Building the whole plugin set would pull every cloud provider's SDK.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
)

// directives is the order the plugins run in, as in CoreDNS's plugin.cfg.
var directives = []string{"bind", "errors", "log", "health", "ready", "cache", "kubernetes", "forward"}

func init() { dnsserver.Directives = directives }

func main() { coremain.Run() }
