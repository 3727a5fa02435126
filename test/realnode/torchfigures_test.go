package realnode

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paddlepaddle/edl/test/framework"
)

// resizeFigure is one resize of a proof run as docs/experiments-torch.md
// tables it: what set it off, when (seconds since the first world
// trained), how long until a world trained again (its cost), and how long
// of that no world trained (the training time it lost).
type resizeFigure struct {
	what           string
	at, cost, idle float64
}

// runFigures is a proof run's figures, from its record.
type runFigures struct {
	resizes []resizeFigure
	// length is the seconds from the first world's training to the end;
	// idle the seconds of it no world trained; restarts how often every
	// worker stopped for a new world.
	length, idle float64
	restarts     int
	finalLoss    string
}

// torchFigures computes a run's figures from its train.log and resizes.csv.
func torchFigures(trainLog, resizesCSV string) (runFigures, error) {
	var f runFigures
	type mark struct {
		training bool
		world    int
		at       float64
	}
	var marks []mark
	var t0 float64
	for _, line := range strings.Split(trainLog, "\n") {
		i := strings.LastIndex(line, "time=")
		if i < 0 {
			continue
		}
		at, err := strconv.ParseFloat(line[i+5:], 64)
		if err != nil {
			return f, fmt.Errorf("train.log: %q: %w", line, err)
		}
		switch {
		case strings.HasPrefix(line, "training "):
			if len(marks) == 0 {
				t0 = at
			}
			world, _ := strconv.Atoi(strings.TrimPrefix(strings.Fields(line)[1], "world_size="))
			marks = append(marks, mark{true, world, at - t0})
		case strings.HasPrefix(line, "stopped "):
			marks = append(marks, mark{false, 0, at - t0})
			f.restarts++
		case strings.HasPrefix(line, "final_loss="):
			f.length = at - t0
			f.finalLoss = strings.Fields(line)[0][len("final_loss="):]
		}
	}
	if len(marks) == 0 || f.finalLoss == "" {
		return f, fmt.Errorf("train.log holds no training or no final loss")
	}
	for k, m := range marks {
		if !m.training && k+1 < len(marks) {
			f.idle += marks[k+1].at - m.at
		}
	}
	for _, row := range strings.Split(strings.TrimSpace(resizesCSV), "\n")[1:] {
		c := strings.Split(row, ",")
		if len(c) != 4 {
			return f, fmt.Errorf("resizes.csv: %q", row)
		}
		at, err := strconv.ParseFloat(c[0], 64)
		if err != nil {
			return f, err
		}
		// A growth is done when a world of its size or more trains; the
		// burst's shrink when any world trains again.
		var what string
		size := 0
		switch {
		case c[1] == "burst":
			what = "higher-priority pods arrive"
		case c[1] == "resize" && grows(c[2], c[3]):
			what = "EDL grows it " + c[2] + " → " + c[3]
			size, _ = strconv.Atoi(c[3])
		default:
			continue // admission (0 → min), EDL keeping the burst's room, the end
		}
		r := resizeFigure{what: what, at: at}
		for k, m := range marks {
			if m.training && m.at > at && m.world >= size {
				r.cost = m.at - at
				if k > 0 && !marks[k-1].training && marks[k-1].at > at {
					r.idle = m.at - marks[k-1].at
				}
				break
			}
		}
		f.resizes = append(f.resizes, r)
	}
	sort.Slice(f.resizes, func(i, j int) bool { return f.resizes[i].at < f.resizes[j].at })
	return f, nil
}

// grows: a resize from a running size to a larger one.
func grows(from, to string) bool {
	a, errA := strconv.Atoi(from)
	b, errB := strconv.Atoi(to)
	return errA == nil && errB == nil && a > 0 && b > a
}

// table is the figures as docs/experiments-torch.md's rows.
func (f runFigures) table() []string {
	var rows []string
	for _, r := range f.resizes {
		rows = append(rows, fmt.Sprintf("| %s | %.1f s | %.1f s | %.1f s |", r.what, r.at, r.cost, r.idle))
	}
	return rows
}

// TestTorchExperimentPageIsTheRecord: docs/experiments-torch.md's tables
// are the committed records of the proof run, priced and unpriced
// (docs/experiments/torch*/), as torchFigures reads them. It needs no
// real node.
func TestTorchExperimentPageIsTheRecord(t *testing.T) {
	root, err := framework.ModuleRoot()
	require.NoError(t, err)
	page := readFile(t, filepath.Join(root, "docs", "experiments-torch.md"))
	for _, run := range []string{"torch", "torch-unpriced"} {
		dir := filepath.Join(root, "docs", "experiments", run)
		f, err := torchFigures(readFile(t, filepath.Join(dir, "train.log")), readFile(t, filepath.Join(dir, "resizes.csv")))
		require.NoError(t, err, run)
		for _, row := range f.table() {
			assert.Contains(t, page, row, "%s's resize", run)
		}
		summary := fmt.Sprintf("| %s | %d | %d | %.1f s | %.1f s | %s |", run, len(f.resizes), f.restarts, f.length, f.idle, f.finalLoss)
		assert.Contains(t, page, summary, "%s's summary", run)
		_, err = os.Stat(filepath.Join(dir, "run.png"))
		assert.NoError(t, err, "%s's plot", run)
	}
}
