package planner

// resource indexes the dimensions of a vec.
const (
	resCPU = iota
	resMemory
	resGPU
	numRes
)

var resNames = [numRes]string{"CPU", "memory", "GPU"}

// vec is an amount of CPU millicores, memory MiB and GPUs, as an array so that
// the hot loops can range over dimensions.
type vec [numRes]int64

func vecOf(r Resources) vec { return vec{r.CPUMilli, r.MemoryMega, r.GPU} }

func (v vec) resources() Resources { return Resources{CPUMilli: v[0], MemoryMega: v[1], GPU: v[2]} }

// fitsIn reports whether v fits in free in every dimension.
func (v vec) fitsIn(free vec) bool {
	return v[0] <= free[0] && v[1] <= free[1] && v[2] <= free[2]
}

func (v vec) plus(w vec) vec  { return vec{v[0] + w[0], v[1] + w[1], v[2] + w[2]} }
func (v vec) minus(w vec) vec { return vec{v[0] - w[0], v[1] - w[1], v[2] - w[2]} }
func (v vec) isZero() bool    { return v == vec{} }

func (v vec) negative() bool { return v[0] < 0 || v[1] < 0 || v[2] < 0 }

// less orders requests "smaller first": GPUs are the scarcest, then CPU, then
// memory.
func (v vec) less(w vec) bool {
	if v[resGPU] != w[resGPU] {
		return v[resGPU] < w[resGPU]
	}
	if v[resCPU] != w[resCPU] {
		return v[resCPU] < w[resCPU]
	}
	return v[resMemory] < w[resMemory]
}

// max0 clamps negative amounts (a node overcommitted by pods bound before a
// resize) to zero, for people.
func (v vec) max0() vec { return vec{max(v[0], 0), max(v[1], 0), max(v[2], 0)} }
