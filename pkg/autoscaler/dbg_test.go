package autoscaler

import (
	"fmt"
	"testing"
)

func TestDbgSeed(t *testing.T) {
	s := newSim(t, 513)
	fmt.Println("cooldown", s.opts.CoolDown, "grace", s.grace)
	for range 123 {
		s.step()
		if s.tick <= 120 {
			s.randomEvent()
		}
		s.cycle()
	}
	s.step()
	s.opts.Now = s.now()
	snap, jobs := s.snapshot()
	p := newPlanner(snap, jobs, s.opts)
	claims := p.reserve(snap.Pending)
	p.yieldToMinimum(claims)
	p.yieldToLoad()
	p.trimStuck()
	p.startGrowth()
	for _, j := range p.jobs {
		fmt.Printf("%s placed %d desired %d movable %v cooling %v starved %v unsched %v mayGrow %v loadAdmits %v fit %d\n", j.key, j.placed, j.desired, j.movable, j.coolingDown, j.starved, j.unschedulable, p.mayGrow(j), p.loadAdmits(j.req), p.grower.firstFit(j.req, j.elig))
	}
	fmt.Println("growLoad", p.growLoad, "total", p.total)
}
