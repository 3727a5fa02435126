package autoscaler

// arrive adds to growth's line the jobs admitted and not Running yet. Plan
// sees a job only once it is Running, and jobs admitted together reach
// Running a cycle or two apart: without this, the first to run would grow
// into all the room the others could use, and rebalancing would then stop
// its new trainers to even them out. So growth plans for an arriving job as
// if it ran — at its minimum, it is the least fulfilled — and keeps what it
// would grow into idle for it, with no action: once it runs, the room is
// there. It does so for at most one cool-down after the job's admission, so
// that a job that never starts (an image that cannot be pulled) does not
// keep its room for long.
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
		j := &jobState{
			key: a.Key, min: int64(a.Min), max: int64(a.Max), desired: int64(a.Min), placed: int64(a.Min),
			priority: a.Priority, req: req, lim: vecOf(a.Limits), ns: namespaceOf(a.Key),
			elig: p.classes.set(a.Placement), movable: true, arriving: true, takerAt: -1,
		}
		j.pool = p.all
		pools := map[int32]bool{}
		j.elig.eachClass(p.classes, func(id int32) { pools[p.poolOf[id]] = true })
		if len(pools) == 1 {
			for k := range pools {
				j.pool = &p.pools[k]
			}
		}
		p.arriving = append(p.arriving, j)
	}
}
