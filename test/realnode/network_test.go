package realnode

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/paddlepaddle/edl/test/framework"
)

// TestPodsReachServicesByNameAndEachOtherByIP runs a web server pod behind
// the Service web, and a client pod that resolves web by its short name
// (CoreDNS through the kube-dns Service, the namespace's search domain),
// fetches a page through the Service (kube-proxy's rules) and from the
// server pod's IP, and reaches the API server through the kubernetes
// Service with its ServiceAccount token.
func TestPodsReachServicesByNameAndEachOtherByIP(t *testing.T) {
	cp := plane(t)
	ns := namespace(t, cp)
	ctx := t.Context()
	image := exampleImage(t)

	server := shellPod("server", image, "mkdir -p /srv && echo hello-from-the-server > /srv/index.html && exec python3 -m http.server 8080 --directory /srv", map[string]string{"app": "web"})
	server.Spec.RestartPolicy = corev1.RestartPolicyAlways
	server.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}},
		PeriodSeconds: 1,
	}
	_, err := cp.Client.CoreV1().Pods(ns).Create(ctx, server, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cp.Client.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	srv := waitPod(t, cp, ns, "server", running)
	require.NotEmpty(t, srv.Status.PodIP)
	waitServiceEndpoint(t, cp, ns, "web", srv.Status.PodIP)

	script := strings.Join([]string{
		"set -e",
		"echo resolved: $(getent hosts web | awk '{print $1}')",
		// kube-proxy writes a new endpoint's rules a moment after the
		// EndpointSlice lists it (until then the ClusterIP refuses), so the
		// client tries for up to 30 s, as any client of a new Service does.
		"echo service: $(python3 -c '" + fetchWithRetry + "' http://web/)",
		"echo pod-ip: $(python3 -c 'import urllib.request, sys; print(urllib.request.urlopen(\"http://\" + sys.argv[1] + \":8080/\", timeout=10).read().decode().strip())' " + srv.Status.PodIP + ")",
		"echo api: $(python3 -c 'import ssl, urllib.request; t = open(\"/var/run/secrets/kubernetes.io/serviceaccount/token\").read(); c = ssl.create_default_context(cafile=\"/var/run/secrets/kubernetes.io/serviceaccount/ca.crt\"); r = urllib.request.Request(\"https://kubernetes.default.svc/version\", headers={\"Authorization\": \"Bearer \" + t}); print(urllib.request.urlopen(r, context=c, timeout=10).status)')",
	}, "\n")
	_, err = cp.Client.CoreV1().Pods(ns).Create(ctx, shellPod("client", image, script, nil), metav1.CreateOptions{})
	require.NoError(t, err)
	client := waitPod(t, cp, ns, "client", ended)
	out := logs(t, cp, ns, "client")
	require.Equal(t, corev1.PodSucceeded, client.Status.Phase, "client pod: %s\n%s", podState(client), out)

	svc, err := cp.Client.CoreV1().Services(ns).Get(context.Background(), "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Contains(t, out, "resolved: "+svc.Spec.ClusterIP, "web resolves to its ClusterIP")
	assert.Contains(t, out, "service: hello-from-the-server")
	assert.Contains(t, out, "pod-ip: hello-from-the-server")
	assert.Contains(t, out, "api: 200", "the API server through the kubernetes Service, with the pod's token")
}

// fetchWithRetry is a Python program printing the page at argv[1], trying
// once a second for 30 s while the connection is refused.
const fetchWithRetry = `import sys, time, urllib.request, urllib.error
for attempt in range(30):
    try:
        print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode().strip()); break
    except urllib.error.URLError as e:
        if attempt == 29: raise
        print("retry after", e.reason, file=sys.stderr); time.sleep(1)`

// waitServiceEndpoint waits until the Service's EndpointSlice lists ip as a
// ready endpoint: the endpointslice controller's part of a Service's set-up.
func waitServiceEndpoint(t *testing.T, cp *framework.ControlPlane, ns, service, ip string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		list, err := cp.Client.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + service})
		if err != nil {
			return false, nil
		}
		for _, s := range list.Items {
			for _, e := range s.Endpoints {
				if ptr.Deref(e.Conditions.Ready, false) && slices.Contains(e.Addresses, ip) {
					return true, nil
				}
			}
		}
		return false, nil
	})
	require.NoError(t, err, "Service %s/%s lists %s as a ready endpoint", ns, service, ip)
}
