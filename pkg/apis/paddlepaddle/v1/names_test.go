package v1_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
)

func TestJobOf(t *testing.T) {
	cases := []struct {
		name   string
		labels map[string]string
		job    string
		role   v1.Role
		ok     bool
	}{
		{"no labels", nil, "", "", false},
		{"other labels", map[string]string{"app": "web"}, "", "", false},
		{"trainer", map[string]string{"paddle-job": "mnist"}, "mnist", v1.RoleTrainer, true},
		{"pserver", map[string]string{"paddle-job-pserver": "mnist"}, "mnist", v1.RolePserver, true},
		{"master", map[string]string{"paddle-job-master": "mnist"}, "mnist", v1.RoleMaster, true},
		{"an empty value names no job", map[string]string{"paddle-job": ""}, "", "", false},
		{"the trainer label first", map[string]string{"paddle-job-master": "b", "paddle-job": "a"}, "a", v1.RoleTrainer, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			job, role, ok := v1.JobOf(c.labels)
			assert.Equal(t, c.job, job)
			assert.Equal(t, c.role, role)
			assert.Equal(t, c.ok, ok)
		})
	}
}

func TestJobOfNameInvertsTheChildNames(t *testing.T) {
	for _, role := range []v1.Role{v1.RoleMaster, v1.RolePserver, v1.RoleTrainer} {
		for _, name := range []string{v1.ReplicaSetName("my-job", role), v1.ServiceName("my-job", role)} {
			job, got, ok := v1.JobOfName(name)
			assert.True(t, ok, name)
			assert.Equal(t, "my-job", job, name)
			assert.Equal(t, role, got, name)
		}
	}
	_, _, ok := v1.JobOfName("my-job-worker")
	assert.False(t, ok)
}

// TestRemovalMarkPatch: the patch is JSON that sets both annotations of a
// mark, the time in UTC, or clears both.
func TestRemovalMarkPatch(t *testing.T) {
	var got map[string]map[string]map[string]*string
	at := time.Date(2026, 11, 29, 13, 4, 5, 0, time.FixedZone("CET", 3600))
	require.NoError(t, json.Unmarshal(v1.RemovalMarkPatch(at), &got))
	assert.Equal(t, map[string]*string{
		v1.AnnotationDeletionCost:     ptr.To(v1.DeletionCostRemove),
		v1.AnnotationMarkedForRemoval: ptr.To("2026-11-29T12:04:05Z"),
	}, got["metadata"]["annotations"])
	require.NoError(t, json.Unmarshal(v1.RemovalMarkPatch(time.Time{}), &got))
	assert.Equal(t, map[string]*string{v1.AnnotationDeletionCost: nil, v1.AnnotationMarkedForRemoval: nil}, got["metadata"]["annotations"])
}
