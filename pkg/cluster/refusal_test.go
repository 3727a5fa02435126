package cluster

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	b "github.com/paddlepaddle/edl/pkg/testing/builders"
)

func TestAdmissionRefusal(t *testing.T) {
	item := func(f func(*corev1.LimitRangeItem)) *corev1.LimitRange {
		it := corev1.LimitRangeItem{Type: corev1.LimitTypeContainer}
		f(&it)
		return &corev1.LimitRange{ObjectMeta: b.LimitRange("bounds", "ns").ObjectMeta, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{it}}}
	}
	minCPU := item(func(it *corev1.LimitRangeItem) { it.Min = b.CPUMemory("200m", "") })
	maxCPU := item(func(it *corev1.LimitRangeItem) { it.Max = b.CPUMemory("1", "") })
	ratio := item(func(it *corev1.LimitRangeItem) { it.MaxLimitRequestRatio = b.CPUMemory("2", "") })
	cases := []struct {
		name   string
		pod    *corev1.Pod
		ranges []*corev1.LimitRange
		quotas []*corev1.ResourceQuota
		want   string
	}{
		{name: "nothing to check", pod: b.Pod("p")},
		{name: "a quota on requests.cpu refuses a container without one", pod: b.Pod("p"),
			quotas: []*corev1.ResourceQuota{b.Quota("q", "ns", []string{"requests.cpu", "4"})},
			want:   "ResourceQuota q tracks requests.cpu, which container main does not state: the API server refuses the pod"},
		{name: "a quota on cpu is a quota on requests.cpu", pod: b.Pod("p", b.Requests("", "1Gi")),
			quotas: []*corev1.ResourceQuota{b.Quota("q", "ns", []string{"cpu", "4"})},
			want:   "ResourceQuota q tracks requests.cpu, which container main does not state: the API server refuses the pod"},
		{name: "a quota on limits.memory, every container named", pod: b.Pod("p", b.Limits("1", ""), b.Init("1", "")),
			quotas: []*corev1.ResourceQuota{b.Quota("q", "ns", []string{"limits.memory", "4Gi"})},
			want:   "ResourceQuota q tracks limits.memory, which container init0, main does not state: the API server refuses the pod"},
		{name: "a sidecar must state it too", pod: b.Pod("p", b.Requests("1", ""), b.Sidecar("", "1Gi")),
			quotas: []*corev1.ResourceQuota{b.Quota("q", "ns", []string{"requests.cpu", "4"})},
			want:   "ResourceQuota q tracks requests.cpu, which container side0 does not state: the API server refuses the pod"},
		{name: "every container states it", pod: b.Pod("p", b.Requests("1", "1Gi")),
			quotas: []*corev1.ResourceQuota{b.Quota("q", "ns", []string{"requests.cpu", "4", "memory", "8Gi", "pods", "3"})}},
		{name: "a quota on pods only needs nothing stated", pod: b.Pod("p"),
			quotas: []*corev1.ResourceQuota{b.Quota("q", "ns", []string{"pods", "3"})}},
		{name: "min: a request below it", pod: b.Pod("p", b.Requests("100m", "")), ranges: []*corev1.LimitRange{minCPU},
			want: "LimitRange bounds refuses container main: its minimum cpu is 200m, the request 100m"},
		{name: "min: no request", pod: b.Pod("p"), ranges: []*corev1.LimitRange{minCPU},
			want: "LimitRange bounds refuses container main: its minimum cpu is 200m and no request states it"},
		{name: "min: met", pod: b.Pod("p", b.Requests("200m", "")), ranges: []*corev1.LimitRange{minCPU}},
		{name: "max: a limit above it", pod: b.Pod("p", b.Requests("1", ""), b.Limits("2", "")), ranges: []*corev1.LimitRange{maxCPU},
			want: "LimitRange bounds refuses container main: its maximum cpu is 1, the limit 2"},
		{name: "max: no limit", pod: b.Pod("p", b.Requests("1", "")), ranges: []*corev1.LimitRange{maxCPU},
			want: "LimitRange bounds refuses container main: its maximum cpu is 1 and no limit states it"},
		{name: "max: met", pod: b.Pod("p", b.Requests("1", ""), b.Limits("1", "")), ranges: []*corev1.LimitRange{maxCPU}},
		{name: "maxLimitRequestRatio: above it", pod: b.Pod("p", b.Requests("1", ""), b.Limits("3", "")), ranges: []*corev1.LimitRange{ratio},
			want: "LimitRange bounds refuses container main: its maxLimitRequestRatio for cpu is 2, the limit 3 over the request 1"},
		{name: "maxLimitRequestRatio: no limit", pod: b.Pod("p", b.Requests("1", "")), ranges: []*corev1.LimitRange{ratio},
			want: "LimitRange bounds refuses container main: its maxLimitRequestRatio for cpu is 2 and no limit states it"},
		{name: "maxLimitRequestRatio: met", pod: b.Pod("p", b.Requests("1", ""), b.Limits("2", "")), ranges: []*corev1.LimitRange{ratio}},
		{name: "the quota is checked before the LimitRange", pod: b.Pod("p"), ranges: []*corev1.LimitRange{minCPU},
			quotas: []*corev1.ResourceQuota{b.Quota("q", "ns", []string{"limits.cpu", "4"})},
			want:   "ResourceQuota q tracks limits.cpu, which container main does not state: the API server refuses the pod"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, AdmissionRefusal(&tc.pod.Spec, tc.ranges, tc.quotas))
		})
	}
}

func TestQuotaMatches(t *testing.T) {
	sel := func(op corev1.ScopeSelectorOperator, values ...string) b.QuotaOption {
		return func(q *corev1.ResourceQuota) {
			q.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{
				{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: op, Values: values}}}
		}
	}
	hard := []string{"requests.cpu", "4"}
	burstable := b.Pod("p", b.Requests("1", ""))
	bestEffort := b.Pod("p")
	deadline := int64(60)
	terminating := b.Pod("p", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = &deadline })
	cases := []struct {
		name  string
		quota *corev1.ResourceQuota
		pod   *corev1.Pod
		class string
		want  bool
	}{
		{"unscoped counts every pod", b.Quota("q", "ns", hard), bestEffort, "", true},
		{"PriorityClass In: the job's class", b.Quota("q", "ns", hard, sel(corev1.ScopeSelectorOpIn, "high", "urgent")), burstable, "high", true},
		{"PriorityClass In: another class", b.Quota("q", "ns", hard, sel(corev1.ScopeSelectorOpIn, "high")), burstable, "low", false},
		{"PriorityClass In: no class", b.Quota("q", "ns", hard, sel(corev1.ScopeSelectorOpIn, "high")), burstable, "", false},
		{"PriorityClass NotIn", b.Quota("q", "ns", hard, sel(corev1.ScopeSelectorOpNotIn, "high")), burstable, "low", true},
		{"PriorityClass Exists", b.Quota("q", "ns", hard, sel(corev1.ScopeSelectorOpExists)), burstable, "low", true},
		{"PriorityClass Exists: no class", b.Quota("q", "ns", hard, sel(corev1.ScopeSelectorOpExists)), burstable, "", false},
		{"PriorityClass DoesNotExist", b.Quota("q", "ns", hard, sel(corev1.ScopeSelectorOpDoesNotExist)), burstable, "", true},
		{"BestEffort: no requests", b.Quota("q", "ns", []string{"pods", "1"}, b.Scopes(corev1.ResourceQuotaScopeBestEffort)), bestEffort, "", true},
		{"BestEffort: requests", b.Quota("q", "ns", []string{"pods", "1"}, b.Scopes(corev1.ResourceQuotaScopeBestEffort)), burstable, "", false},
		{"NotBestEffort: requests", b.Quota("q", "ns", hard, b.Scopes(corev1.ResourceQuotaScopeNotBestEffort)), burstable, "", true},
		{"NotBestEffort: no requests", b.Quota("q", "ns", hard, b.Scopes(corev1.ResourceQuotaScopeNotBestEffort)), bestEffort, "", false},
		{"NotTerminating: a job's pod", b.Quota("q", "ns", hard, b.Scopes(corev1.ResourceQuotaScopeNotTerminating)), burstable, "", true},
		{"Terminating: a job's pod", b.Quota("q", "ns", hard, b.Scopes(corev1.ResourceQuotaScopeTerminating)), burstable, "", false},
		{"Terminating: activeDeadlineSeconds", b.Quota("q", "ns", hard, b.Scopes(corev1.ResourceQuotaScopeTerminating)), terminating, "", true},
		{"every scope must match", b.Quota("q", "ns", hard, b.Scopes(corev1.ResourceQuotaScopeNotTerminating), sel(corev1.ScopeSelectorOpIn, "high")), burstable, "low", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, QuotaMatches(tc.quota, &tc.pod.Spec, tc.class))
		})
	}
}
