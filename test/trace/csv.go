package trace

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
)

// table is a CSV file read whole: its rows after the header, each with the
// line it starts on, so that an error can point at the row and column.
type table struct {
	path   string
	header []string
	rows   [][]string
	lines  []int
}

// readTable reads the CSV file at path, whose first line must be header
// exactly, and returns its rows; a file with no row is an error.
func readTable(path string, header ...string) (*table, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	r := csv.NewReader(f)
	r.FieldsPerRecord = len(header)
	t := &table{path: path, header: header}
	first, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("%s line 1: %w", path, err)
	}
	if !slices.Equal(first, header) {
		return nil, fmt.Errorf("%s line 1: header %q, want %q", path, first, header)
	}
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err) // a csv.ParseError names the line
		}
		line, _ := r.FieldPos(0)
		t.rows, t.lines = append(t.rows, rec), append(t.lines, line)
	}
	if len(t.rows) == 0 {
		return nil, fmt.Errorf("%s: no rows after the header", path)
	}
	return t, nil
}

// row reads the fields of one row of a table. Its first error sticks, and
// the readers return zero after it, so that a row is read field by field
// and checked once.
type row struct {
	t   *table
	i   int
	err error
}

// row returns the reader of row i.
func (t *table) row(i int) *row { return &row{t: t, i: i} }

// fail records the first error of the row, naming the file, line and
// column.
func (r *row) fail(col int, format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%s line %d: column %s %q: %s", r.t.path, r.t.lines[r.i], r.t.header[col],
			r.t.rows[r.i][col], fmt.Sprintf(format, args...))
	}
}

// text is the field of column col as it is.
func (r *row) text(col int) string { return r.t.rows[r.i][col] }

// float is column col as a finite number.
func (r *row) float(col int) float64 {
	v, err := strconv.ParseFloat(r.text(col), 64)
	switch {
	case err != nil:
		r.fail(col, "not a number")
	case math.IsNaN(v) || math.IsInf(v, 0):
		r.fail(col, "not a finite number")
	}
	return v
}

// positive is column col as a number above 0.
func (r *row) positive(col int) float64 {
	v := r.float(col)
	if r.err == nil && !(v > 0) {
		r.fail(col, "not above 0")
	}
	return v
}

// nonNegative is column col as a number of at least 0.
func (r *row) nonNegative(col int) float64 {
	v := r.float(col)
	if r.err == nil && v < 0 {
		r.fail(col, "below 0")
	}
	return v
}

// count is column col as a whole number of at least 1 that fits an int32.
func (r *row) count(col int) int32 {
	v, err := strconv.ParseInt(r.text(col), 10, 32)
	if err != nil || v < 1 {
		r.fail(col, "not a whole number of at least 1")
		return 0
	}
	return int32(v)
}
