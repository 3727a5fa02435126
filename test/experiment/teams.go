package experiment

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
)

// Burst is one team turning busy in Teams: its jobs, submitted at once at
// At, deleted (ended) at End, when the team turns idle or the run ends.
type Burst struct {
	Team    string
	At, End time.Duration
	Jobs    []string
	// Reclaiming says another team was busy before the burst and still
	// is: the team's share must be taken back from it.
	Reclaiming bool
}

// TeamSample is one team of Teams at one instant.
type TeamSample struct {
	Name string
	// CPURunningMilli is Σ CPU requests of the Running pods (not being
	// deleted) in the team's namespaces; Trainers counts its Running
	// trainers.
	CPURunningMilli int64
	Trainers        int
	// DemandMilli is what the team's jobs would use: every job neither
	// deleted nor finished, with its pservers and its maximum of trainers.
	DemandMilli int64
	// FairMilli is the team's weighted fair share (FairShares) of the CPU
	// the teams' pods hold together (filled in by the scenario).
	FairMilli float64
	// DeservedMilli is the CPU of the deserved share EDL gave the team at
	// its last plan (its TrainingQueue's status.deserved); 0 without one.
	DeservedMilli int64
}

// Unmet reports whether the team would use more than it holds.
func (t TeamSample) Unmet() bool { return t.DemandMilli > t.CPURunningMilli }

// TeamJob builds a job of Teams in the team's namespace: trainers and
// pservers of the report's sizes; its master requests zero CPU and memory
// (it states them, as a namespace's ResourceQuota on requests requires).
func TeamJob(team string, i int, trainerMin, trainerMax, pservers int32) *v1.TrainingJob {
	job := NewJob(TeamJobName(team, i), TeamNamespace(team), trainerMin, trainerMax, pservers, TrainerSize, PserverSize)
	job.Spec.Master.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0"), corev1.ResourceMemory: resource.MustParse("0")}
	return job
}

// busy reports whether team i is busy in phase k of the schedule.
func (t TeamsSize) busy(i, k int) bool {
	return i < len(t.Busy) && k >= 0 && k < len(t.Busy[i]) && t.Busy[i][k] == 'X'
}

// phases is the schedule's length in phases.
func (t TeamsSize) phases() int {
	n := 0
	for _, b := range t.Busy {
		n = max(n, len(b))
	}
	return n
}

// TeamQueue is the TrainingQueue of a team of Teams on a cluster of
// allocMilli CPU: its namespace, its weight and its guarantee.
func TeamQueue(team TeamSpec, allocMilli int64) *v1.TrainingQueue {
	q := &v1.TrainingQueue{
		ObjectMeta: metav1.ObjectMeta{Name: team.Name},
		Spec:       v1.TrainingQueueSpec{Namespaces: []string{TeamNamespace(team.Name)}, Weight: ptr.To(team.Weight)},
	}
	if team.Guarantee > 0 {
		q.Spec.Guarantee = corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(int64(team.Guarantee*float64(allocMilli)), resource.DecimalSI)}
	}
	return q
}

// TeamQuota is the static ResourceQuota of the variant quota: the team's
// weight's part of the cluster's allocMilli CPU, as requests.
func TeamQuota(team TeamSpec, allocMilli int64) *corev1.ResourceQuota {
	total := int32(0)
	for _, t := range TeamSpecs {
		total += t.Weight
	}
	cpu := allocMilli * int64(team.Weight) / int64(total)
	return &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "team", Namespace: TeamNamespace(team.Name)},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceRequestsCPU: *resource.NewMilliQuantity(cpu, resource.DecimalSI)}},
	}
}

// allocMilli is the CPU the size's nodes of Teams have together.
func (s Size) allocMilli() int64 { return int64(s.Nodes) * milli(s.NodeCPU) }

// TeamsByNamespace names the team of each namespace of Teams.
func TeamsByNamespace() map[string]string {
	out := map[string]string{}
	for _, team := range TeamSpecs {
		out[TeamNamespace(team.Name)] = team.Name
	}
	return out
}

// installTeams creates the teams' namespaces and, by the variant, their
// TrainingQueues (edl), their ResourceQuotas (quota) or neither
// (edl+noteams).
func (d *driver) installTeams(ctx context.Context) error {
	alloc := d.opts.Size.allocMilli()
	for _, team := range TeamSpecs {
		ns := TeamNamespace(team.Name)
		_, err := d.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s: %w", ns, err)
		}
		switch v := d.opts.Variant; {
		case v.Quota:
			if _, err := d.kube.CoreV1().ResourceQuotas(ns).Create(ctx, TeamQuota(team, alloc), metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("create the ResourceQuota of team %s: %w", team.Name, err)
			}
		case !v.NoTeams:
			if _, err := d.tj.PaddlepaddleV1().TrainingQueues().Create(ctx, TeamQueue(team, alloc), metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("create the TrainingQueue of team %s: %w", team.Name, err)
			}
		}
	}
	return nil
}

// teams walks the schedule: at the start of each phase the jobs of the
// teams turning idle end (are deleted), then the teams turning busy submit
// a burst of jobs; the run ends one phase after the last starts.
func (d *driver) teams(ctx context.Context) error {
	size := d.opts.Size
	t := size.Teams
	if err := d.installTeams(ctx); err != nil {
		return err
	}
	start := time.Now()
	d.mu.Lock()
	d.windowStart = d.rec.Since(start)
	d.mu.Unlock()
	next := make([]int, len(TeamSpecs))    // each team's next job number
	open := make([]*Burst, len(TeamSpecs)) // each team's burst while it is busy
	for k := range t.phases() {
		if err := d.sleepUntil(ctx, start.Add(time.Duration(k)*t.Phase)); err != nil {
			return err
		}
		var what []string
		// 1. The teams turning idle: their jobs end.
		for i, team := range TeamSpecs {
			if b := open[i]; b != nil && !t.busy(i, k) {
				for _, name := range b.Jobs {
					d.rec.Deleted(name)
					err := d.tj.PaddlepaddleV1().TrainingJobs(TeamNamespace(team.Name)).Delete(ctx, name,
						metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
					if err != nil && !apierrors.IsNotFound(err) {
						return fmt.Errorf("delete %s: %w", name, err)
					}
				}
				b.End = d.rec.Since(time.Now())
				d.endBurst(b)
				open[i] = nil
				what = append(what, team.Name+" ends")
			}
		}
		// 2. The teams turning busy: a burst of jobs.
		for i, team := range TeamSpecs {
			if open[i] != nil || !t.busy(i, k) {
				continue
			}
			b := &Burst{Team: team.Name}
			for j := range TeamSpecs {
				b.Reclaiming = b.Reclaiming || (j != i && t.busy(j, k-1) && t.busy(j, k))
			}
			b.At = d.rec.Since(time.Now())
			for range t.Burst {
				job := TeamJob(team.Name, next[i], t.TrainerMin, t.TrainerMax, size.Pservers)
				next[i]++
				if err := d.submit(ctx, job); err != nil {
					return err
				}
				b.Jobs = append(b.Jobs, job.Name)
			}
			open[i] = b
			what = append(what, fmt.Sprintf("%s submits %d", team.Name, len(b.Jobs)))
		}
		if len(what) == 0 {
			what = append(what, "no change")
		}
		d.step(fmt.Sprintf("phase %d: %s", k+1, strings.Join(what, ", ")))
	}
	if err := d.sleepUntil(ctx, start.Add(time.Duration(t.phases())*t.Phase)); err != nil {
		return err
	}
	end := d.rec.Since(time.Now())
	for _, b := range open {
		if b != nil {
			b.End = end
			d.endBurst(b)
		}
	}
	d.step("end")
	return nil
}

// endBurst records a burst that ended.
func (d *driver) endBurst(b *Burst) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.bursts = append(d.bursts, *b)
}

// teamsBound fills in the bounds of a Teams sample — every live job's
// trainers and pservers, and the pods of the jobs already deleted that
// still run, placed anew — and each team's fair share of the CPU the
// teams' pods hold together.
func (d *driver) teamsBound(s *Sample, ratio func(int64, int64, error) float64) {
	size := d.opts.Size
	t := size.Teams
	trainers := s.LiveJobs*int(t.TrainerMax) + s.OrphanTrainers
	pservers := s.LiveJobs*int(size.Pservers) + s.OrphanPservers
	// No job must come first: every minimum is 0, as in Training.
	s.Ideal = ratio(Ideal(size.node(), size.Nodes, []PodDemand{TrainerSize.demand("trainer", 0, trainers), PserverSize.demand("pserver", 0, pservers)}))
	s.IdealTrainers = min(s.Ideal, ratio(IdealIn(CPU, s.TrainerRooms, s.HeldMilli, s.CPUAllocMilli, []PodDemand{TrainerSize.demand("trainer", 0, trainers)})))
	fillFairShares(s)
}

// fillFairShares sets each team's FairMilli: FairShares of the CPU the
// teams' pods hold together, by the teams' weights, demands and
// guarantees (a part of the allocatable CPU).
func fillFairShares(s *Sample) {
	claims := make([]Claim, len(s.Teams))
	held := 0.0
	for i, ts := range s.Teams {
		held += float64(ts.CPURunningMilli)
		claims[i] = Claim{Weight: 1, Demand: float64(ts.DemandMilli)}
		for _, spec := range TeamSpecs {
			if spec.Name == ts.Name {
				claims[i].Weight = float64(spec.Weight)
				claims[i].Guarantee = spec.Guarantee * float64(s.CPUAllocMilli)
			}
		}
	}
	for i, f := range FairShares(held, claims) {
		s.Teams[i].FairMilli = f
	}
}

// DescribeTeams says what the size's Teams runs: the teams, the jobs of a
// burst and the schedule.
func DescribeTeams(size Size) string {
	t := size.Teams
	var teams []string
	for i, team := range TeamSpecs {
		d := fmt.Sprintf("%s (namespace %s, weight %d", team.Name, TeamNamespace(team.Name), team.Weight)
		if team.Guarantee > 0 {
			d += fmt.Sprintf(", guarantee %.0f%% of the CPU", 100*team.Guarantee)
		}
		if i < len(t.Busy) {
			d += ", busy " + t.Busy[i]
		}
		teams = append(teams, d+")")
	}
	kcm, _ := CompressedRates(size.Compression)
	return fmt.Sprintf("teams %s; phases of %s ('X' busy); a team turning busy submits %d job(s) of %d..%d trainers and %d pservers at once, which end when it turns idle; kube-controller-manager's and kube-scheduler's client rates and edl's -max_moves_per_second %g times their defaults, as time is (kube-controller-manager %s)",
		strings.Join(teams, ", "), t.Phase, t.Burst, t.TrainerMin, t.TrainerMax, size.Pservers, size.Compression, strings.Join(kcm, " "))
}
