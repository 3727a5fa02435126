package v1

import (
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ShellChars are the characters that make a trainer's entrypoint a shell
// line: quotes, variables, redirections, pipes, globs, comments.
const ShellChars = "'\"$`\\|&;<>()*?~#"

// TorchrunArgs reads a PyTorch trainer's entrypoint as the user's own
// torchrun line: for `torchrun ARGS` and `python[3] -m torch.distributed.run
// ARGS` it returns ARGS (torchrun's options, the script and its arguments)
// and true; for any other line, nil and false.
func TorchrunArgs(entrypoint string) ([]string, bool) {
	return TorchrunArgv(strings.Fields(entrypoint))
}

// TorchrunArgv is TorchrunArgs of a launch line given as its words, as a
// trainer template's command and args give it.
func TorchrunArgv(args []string) ([]string, bool) {
	switch {
	case len(args) >= 1 && path.Base(args[0]) == "torchrun":
		return args[1:], true
	case len(args) >= 3 && IsPython(args[0]) && args[1] == "-m" && args[2] == "torch.distributed.run":
		return args[3:], true
	}
	return nil, false
}

// IsPython reports whether a program is a Python interpreter: python,
// python3 or python3.N, by any path.
func IsPython(program string) bool {
	b := path.Base(program)
	return b == "python" || b == "python3" || strings.HasPrefix(b, "python3.")
}

// torchrunOwned are the torchrun options EDL gives every trainer through
// its PET_* variables, with where each comes from; an option on the line
// would override the variable.
var torchrunOwned = map[string]string{
	"nnodes":         "spec.trainer.min-instance and max-instance",
	"nproc-per-node": "spec.elasticPolicy.nProcPerNode",
	"rdzv-backend":   "spec.elasticPolicy.rdzvBackend",
	"rdzv-endpoint":  "the master's Service",
	"rdzv-id":        "the job's UID",
	"rdzv-conf":      "spec.elasticPolicy.rdzvConf",
	"max-restarts":   "EDL's restart policy (spec.elasticPolicy.maxRestarts counts the job's)",
	"standalone":     "the rendezvous store in the master pod",
	"local-addr":     "the pod's IP",
	"node-rank":      "the rendezvous, which ranks the trainers",
	"master-addr":    "the rendezvous",
	"master-port":    "the rendezvous",
}

// OwnedOption is a torchrun option on a launch line that EDL gives every
// trainer itself: its words' index in the arguments, how many words it
// takes (2 when its value is the next word), its name and where EDL's
// value comes from. It is not part of the API.
//
// +k8s:deepcopy-gen=false
// +k8s:openapi-gen=false
type OwnedOption struct {
	Index, Words int
	Name, From   string
}

// OwnedOptions are the options among torchrun's arguments (TorchrunArgs),
// before the script, that are EDL's.
func OwnedOptions(args []string) []OwnedOption {
	var owned []OwnedOption
	for i := 0; i < len(args) && strings.HasPrefix(args[i], "-"); i++ {
		name, _, hasValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		name = strings.ReplaceAll(name, "_", "-")
		words := 1
		if !hasValue && !torchrunFlags[name] {
			words = 2 // its value is the next word
		}
		if from, ok := torchrunOwned[name]; ok {
			owned = append(owned, OwnedOption{Index: i, Words: words, Name: name, From: from})
		}
		i += words - 1
	}
	return owned
}

// torchrunFlags are torchrun's options that take no value; every other
// option takes one.
var torchrunFlags = map[string]bool{"standalone": true, "no-python": true, "run-path": true, "module": true, "m": true, "virtual-local-rank": true}

// torchrunLine checks a PyTorch trainer's own torchrun line: torchrun's
// options before the script must leave EDL's to EDL, and the line is not
// a shell's (torchrun runs in the trainer as its first program, not under
// sh).
func torchrunLine(p *field.Path, entrypoint string) field.ErrorList {
	args, ok := TorchrunArgs(entrypoint)
	if !ok {
		return nil
	}
	if strings.ContainsAny(entrypoint, ShellChars) {
		return field.ErrorList{field.Invalid(p, entrypoint,
			"a torchrun line runs without a shell: leave out quotes, variables and redirections, or run torchrun's script under sh -c in a script of its own")}
	}
	return torchrunOptions(p, entrypoint, args)
}

// torchrunOptions checks torchrun's options on a line: those before the
// script must leave EDL's to EDL. value is the line as the error shows it.
func torchrunOptions(p *field.Path, value any, args []string) field.ErrorList {
	if owned := OwnedOptions(args); len(owned) > 0 {
		o := owned[0]
		return field.ErrorList{field.Invalid(p, value, "torchrun's --"+o.Name+" is EDL's: it comes from "+o.From)}
	}
	return nil
}
