package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/paddlepaddle/edl/pkg/kubeflow"
)

// newConvertCommand is `kubectl edl convert -f FILE`: Kubeflow PyTorchJobs
// made TrainingJobs, on stdout, with a line on stderr for each field they
// cannot carry. It reads a file and asks no cluster.
func newConvertCommand(r *root) *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "convert -f FILE",
		Short: "Turn Kubeflow PyTorchJobs into TrainingJobs, saying what they cannot carry",
		Long: `convert turns each Kubeflow PyTorchJob (kubeflow.org/v1) of FILE (- for stdin) into a TrainingJob
(framework PyTorch) that runs the same containers, and prints it as YAML, documents separated by ---.
Kubeflow's Master and Workers all become trainers; EDL's own master pod holds the rendezvous store.

On stderr, one line for each field of the input the TrainingJob does not carry as written, naming its
path in the input and why ("convert: <path>: ..."; with several jobs, "convert: <job>: <path>: ...").
A file holding anything but PyTorchJobs is an error, and nothing is printed. See docs/kubeflow.md.

  kubectl edl convert -f job.yaml | kubectl apply --server-side -f -`,
		Args: cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			if file == "" {
				return usagef("name the file: -f FILE, or -f - for stdin")
			}
			data, err := readInput(file, r.streams.In)
			if err != nil {
				return err
			}
			return convert(file, data, r.streams.Out, r.streams.ErrOut)
		},
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", "the file of PyTorchJobs; - reads stdin")
	return cmd
}

// readInput reads file, or in for "-".
func readInput(file string, in io.Reader) ([]byte, error) {
	if file == "-" {
		return io.ReadAll(in)
	}
	data, err := os.ReadFile(file) // #nosec G304 -- the file the user named
	if errors.Is(err, fs.ErrNotExist) {
		return nil, usagef("%s: no such file", file)
	}
	return data, err
}

// convert converts every PyTorchJob of data, and prints the TrainingJobs
// on out and the notes on errOut, only once every one converted.
func convert(file string, data []byte, out, errOut io.Writer) error {
	jobs, err := kubeflow.ConvertYAML(data)
	if err != nil {
		return fmt.Errorf("convert %s: %w", file, err)
	}
	if len(jobs) == 0 {
		return fmt.Errorf("convert %s: no %s %s in it", file, kubeflow.APIVersion, kubeflow.Kind)
	}
	docs := make([][]byte, len(jobs))
	for i := range jobs {
		if docs[i], err = jobs[i].YAML(); err != nil {
			return fmt.Errorf("convert %s: %w", file, err)
		}
	}
	for i, doc := range docs {
		if i > 0 {
			fmt.Fprintln(out, "---")
		}
		if _, err := out.Write(doc); err != nil {
			return err
		}
	}
	for _, j := range jobs {
		prefix := "convert: "
		if len(jobs) > 1 {
			prefix += j.TrainingJob.Name + ": "
		}
		for _, n := range j.Notes {
			fmt.Fprintln(errOut, prefix+n.String())
		}
	}
	return nil
}
