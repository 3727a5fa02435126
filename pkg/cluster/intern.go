package cluster

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// maxShared bounds the distinct values an intern table remembers. Jobs come
// and go, and so do their labels: a full table starts over, which forgets
// the values of jobs long gone (the pods that share a value keep it).
const maxShared = 4096

// internTable shares equal values between the cached pods. The pods of one
// template carry equal labels, requests and limits, and every decoded pod has
// its own maps of them: at 150,000 pods those maps were a third of the
// cache. TransformPod hands every pod the first equal map it saw instead. The
// cached pods are read-only, so sharing their maps is safe.
type internTable[T any] struct {
	mu sync.Mutex
	m  map[string]T
	// limit is the most values kept, maxShared when zero.
	limit int
}

// share returns the value stored under key, else stores v there and returns
// v.
func (t *internTable[T]) share(key string, v T) T {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.m[key]; ok {
		return s
	}
	if limit := cmp.Or(t.limit, maxShared); t.m == nil || len(t.m) >= limit {
		t.m = make(map[string]T, 64)
	}
	t.m[key] = v
	return v
}

var (
	sharedResourceLists internTable[corev1.ResourceList]
	sharedLabels        internTable[map[string]string]
	sharedPodResources  internTable[*PodResources]
	// Every job's ReplicaSets (three a job) and every node name must fit.
	sharedOwners  = internTable[[]metav1.OwnerReference]{limit: 1 << 15}
	sharedStrings = internTable[string]{limit: 1 << 15}
)

// shareString returns the string equal to s that was seen first, or s: a
// decoded pod has its own copy of its namespace, node name, priority class
// and container names, which thousands of pods share.
func shareString(s string) string {
	if s == "" {
		return s
	}
	return sharedStrings.share(s, s)
}

// shareOwners returns the owner references equal to refs that were seen
// first, or refs: the pods of one ReplicaSet have equal ones.
func shareOwners(refs []metav1.OwnerReference) []metav1.OwnerReference {
	if len(refs) == 0 {
		return refs
	}
	var b strings.Builder
	for i := range refs {
		r := &refs[i]
		for _, part := range []string{r.APIVersion, r.Kind, r.Name, string(r.UID), optBool(r.Controller), optBool(r.BlockOwnerDeletion)} {
			b.WriteString(part)
			b.WriteByte(';')
		}
	}
	return sharedOwners.share(b.String(), refs)
}

// optBool renders an optional bool: unset, true or false.
func optBool(b *bool) string {
	if b == nil {
		return "-"
	}
	return strconv.FormatBool(*b)
}

// shareResources returns the list equal to l that was seen first, or l.
// Lists are equal when they name the same resources with quantities of the
// same canonical value ("1000m" and "1" are equal).
func shareResources(l corev1.ResourceList) corev1.ResourceList {
	shared, _ := shareResourcesKeyed(l)
	return shared
}

// shareResourcesKeyed is shareResources that also returns l's key, "" for an
// empty list.
func shareResourcesKeyed(l corev1.ResourceList) (corev1.ResourceList, string) {
	if len(l) == 0 {
		return l, ""
	}
	key := resourcesKey(l)
	return sharedResourceLists.share(key, l), key
}

// resourcesKey renders l so that equal lists get equal keys.
func resourcesKey(l corev1.ResourceList) string {
	return mapKey(l, func(q resource.Quantity) string { return q.String() })
}

// shareLabels returns the labels equal to l that were seen first, or l.
func shareLabels(l map[string]string) map[string]string {
	if len(l) == 0 {
		return l
	}
	return sharedLabels.share(mapKey(l, func(v string) string { return v }), l)
}

// mapKey renders m as its sorted "key=value;" pairs. Neither resource names,
// quantities nor label keys and values can hold '=' or ';', so equal keys
// mean equal maps.
func mapKey[K ~string, V any, M ~map[K]V](m M, value func(V) string) string {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(string(k))
		b.WriteByte('=')
		b.WriteString(value(m[k]))
		b.WriteByte(';')
	}
	return b.String()
}
