package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/waitroom/waitroom/internal/hygiene/netclass"
)

const networksUsage = `usage:
  waitroom networks build -classes asn-classes.txt [-o networks.txt] ip2asn-v4.tsv [ip2asn-v6.tsv ...]
  waitroom networks check networks.txt

build writes a networks file (WAITROOM_NETWORKS_FILE) from ip2asn range
files and a list of "ASN class" lines; check reads one and counts its
prefixes per class. See deploy/networks/README.md.
`

// networksCommand runs `waitroom networks ...` with args after "networks"
// and returns the exit code: 0 done, 1 failed, 2 misused.
func networksCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, networksUsage)
		return 2
	}
	var err error
	switch args[0] {
	case "build":
		err = networksBuild(args[1:], stdout, stderr)
	case "check":
		err = networksCheck(args[1:], stdout)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, networksUsage)
		return 0
	default:
		err = errUsage{fmt.Sprintf("unknown command %q", args[0])}
	}
	var usage errUsage
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &usage):
		fmt.Fprintf(stderr, "waitroom networks: %s\n%s", usage.msg, networksUsage)
		return 2
	default:
		fmt.Fprintf(stderr, "waitroom networks %s: %v\n", args[0], err)
		return 1
	}
}

// errUsage is a command line the networks command cannot read.
type errUsage struct{ msg string }

func (e errUsage) Error() string { return e.msg }

func networksBuild(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("waitroom networks build", flag.ContinueOnError)
	fs.SetOutput(stderr)
	classesPath := fs.String("classes", "", "file of \"ASN class\" lines (required)")
	outPath := fs.String("o", "-", "networks file to write (- for standard output)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage{err.Error()}
	}
	if *classesPath == "" || fs.NArg() == 0 {
		return errUsage{"build needs -classes and at least one ip2asn file"}
	}
	classes, err := os.Open(*classesPath)
	if err != nil {
		return err
	}
	defer classes.Close()
	var ranges []io.Reader
	for _, p := range fs.Args() {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		ranges = append(ranges, f)
	}
	if *outPath == "-" {
		return netclass.Build(stdout, classes, ranges...)
	}
	return writeReplacing(*outPath, func(w io.Writer) error { return netclass.Build(w, classes, ranges...) })
}

// writeReplacing writes path through a temporary file renamed into place,
// so that a running room polling the file never reads half of it.
func writeReplacing(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func networksCheck(args []string, stdout io.Writer) error {
	if len(args) != 1 {
		return errUsage{"check needs one file"}
	}
	f, err := os.Open(args[0])
	if err != nil {
		return err
	}
	defer f.Close()
	t, err := netclass.Parse(f, args[0])
	if err != nil {
		return err
	}
	s := t.Sizes()
	fmt.Fprintf(stdout, "%s: %d prefixes: shared %d, hosting %d, default %d\n",
		args[0], t.Len(), s[netclass.Shared], s[netclass.Hosting], s[netclass.Default])
	return nil
}
