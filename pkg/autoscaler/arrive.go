package autoscaler

// arrive notes the jobs admitted and not Running yet that growth keeps room
// for. Plan sees a job only once it is Running, and jobs admitted together
// reach Running a cycle or two apart: without this, the first to run would
// grow into all the room the others could use, and rebalancing would then
// stop its new trainers to even them out. So, like a job cooling down, an
// arriving job holds the room it could use from the jobs of its priority and
// lower — for at most one cool-down after its admission, so that a job that
// never starts (an image that cannot be pulled) does not hold it for long.
func (p *planner) arrive(arriving []ArrivingJob) {
	if p.opts.CoolDown <= 0 {
		return
	}
	seen := map[string]bool{}
	for i := range arriving {
		a := &arriving[i]
		req := vecOf(a.Request)
		if _, running := p.byKey[a.Key]; running || seen[a.Key] || a.Min >= a.Max || a.Min < 0 ||
			req.isZero() || req.negative() || p.opts.Now.Sub(a.Admitted) >= p.opts.CoolDown {
			continue
		}
		seen[a.Key] = true
		p.arriving = append(p.arriving, &jobState{
			key: a.Key, min: int64(a.Min), max: int64(a.Max), desired: int64(a.Min), placed: int64(a.Min),
			priority: a.Priority, req: req, elig: p.classes.set(a.Placement), arriving: true,
		})
	}
}
