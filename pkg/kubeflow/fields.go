package kubeflow

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Note is a field of the input that the TrainingJob does not carry as
// written: its path in the input, what became of it and why.
type Note struct {
	Path    string
	Message string
}

// String is the note as one line, "path: message".
func (n Note) String() string { return n.Path + ": " + n.Message }

// noSuchField is why a field the conversion does not know is not carried.
const noSuchField = "EDL has no such field"

// object is one map of the decoded input, read field by field. Each field
// read is marked, so that [reader.rest] finds the fields nothing read.
type object struct {
	path *field.Path
	m    map[string]any
	read map[string]bool
}

// take reads a field: its value, and whether it is there and not null. A
// null field counts as read: it says nothing.
func (o *object) take(key string) (any, bool) {
	v, ok := o.m[key]
	if ok {
		o.read[key] = true
	}
	return v, ok && v != nil
}

// reader reads one decoded document and collects its notes.
type reader struct {
	objects []*object
	notes   []Note
}

// open starts reading the map at path.
func (r *reader) open(path *field.Path, m map[string]any) *object {
	o := &object{path: path, m: m, read: map[string]bool{}}
	r.objects = append(r.objects, o)
	return o
}

// note records what became of the field at path.
func (r *reader) note(path *field.Path, message string) {
	r.notes = append(r.notes, Note{Path: path.String(), Message: message})
}

// drop records that the field at path is not carried, and why.
func (r *reader) drop(path *field.Path, why string) { r.note(path, "not carried: "+why) }

// dropField reads o's key, when it is there, as a field not carried.
func (r *reader) dropField(o *object, key, why string) {
	if _, ok := o.take(key); ok {
		r.drop(o.path.Child(key), why)
	}
}

// rest notes every field that nothing read as not carried, and returns
// every note in the order of the input's paths.
func (r *reader) rest() []Note {
	for _, o := range r.objects {
		keys := make([]string, 0, len(o.m))
		for k := range o.m {
			if !o.read[k] {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			r.drop(o.path.Child(k), noSuchField)
		}
	}
	sort.SliceStable(r.notes, func(i, j int) bool { return r.notes[i].Path < r.notes[j].Path })
	return r.notes
}

// child reads o's key as a map; nil when it is not there.
func (r *reader) child(o *object, key string) (*object, error) {
	v, ok := o.take(key)
	if !ok {
		return nil, nil
	}
	m, isMap := v.(map[string]any)
	if !isMap {
		return nil, typeError(o.path.Child(key), "an object", v)
	}
	return r.open(o.path.Child(key), m), nil
}

// str reads o's key as a string.
func str(o *object, key string) (string, bool, error) {
	v, ok := o.take(key)
	if !ok {
		return "", false, nil
	}
	s, isString := v.(string)
	if !isString {
		return "", false, typeError(o.path.Child(key), "a string", v)
	}
	return s, true, nil
}

// integer reads o's key as a whole number that fits an int32, as every
// number of a PyTorchJob does.
func integer(o *object, key string) (int32, bool, error) {
	v, ok := o.take(key)
	if !ok {
		return 0, false, nil
	}
	n, isWhole := whole(v)
	if !isWhole || n < math.MinInt32 || n > math.MaxInt32 {
		return 0, false, typeError(o.path.Child(key), "an integer", v)
	}
	return int32(n), true, nil // #nosec G115 -- within int32 above
}

// whole is v as a whole number, decoded as an int64 or a float64.
func whole(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case float64:
		return int64(x), x == math.Trunc(x) && math.Abs(x) < 1<<53
	}
	return 0, false
}

// boolean reads o's key as true or false.
func boolean(o *object, key string) (bool, bool, error) {
	v, ok := o.take(key)
	if !ok {
		return false, false, nil
	}
	b, isBool := v.(bool)
	if !isBool {
		return false, false, typeError(o.path.Child(key), "true or false", v)
	}
	return b, true, nil
}

// stringMap reads o's key as a map of strings: labels, annotations.
func stringMap(o *object, key string) (map[string]string, error) {
	v, ok := o.take(key)
	if !ok {
		return nil, nil
	}
	m, isMap := v.(map[string]any)
	if !isMap {
		return nil, typeError(o.path.Child(key), "a map of strings", v)
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		s, isString := v.(string)
		if !isString {
			return nil, typeError(o.path.Child(key).Key(k), "a string", v)
		}
		out[k] = s
	}
	return out, nil
}

// typeError says that the field at path holds got, not what it should.
func typeError(path *field.Path, want string, got any) error {
	data, _ := json.Marshal(got)
	return fmt.Errorf("%s: want %s, not %s", path, want, data)
}
