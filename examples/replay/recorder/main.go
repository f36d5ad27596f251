// Command recorder writes what a controller's informers actually receive:
// one JSON line per Lease (kube-node-lease) and Node delivered to a
// client-go shared informer's handlers, with the time it was received on
// the recorder's clock. The replay command reads the file with
// -informer-recording: it is the exact record of watch delivery, which no
// audit log holds. See ../README.md.
//
//	go run ./examples/replay/recorder -kubeconfig ~/.kube/config -out informer.jsonl
//
// Each line is an incident.Delivery:
//
//	{"received":"2026-01-01T00:00:10.012Z","kind":"Lease","event":"update","name":"n0","namespace":"kube-node-lease","resourceVersion":"812","renewTime":"2026-01-01T00:00:10.001Z"}
//	{"received":"2026-01-01T00:00:10.5Z","kind":"Node","event":"update","name":"n0","resourceVersion":"813","ready":"True","lastHeartbeatTime":"2026-01-01T00:00:10Z"}
//
// and, first, a Clock line: the apiserver's Date header (whole seconds)
// against the recorder's clock when the response arrived.
//
// The recorder stops on SIGINT or SIGTERM (exit 0), or with an error
// naming the limit when -max-lines or -max-bytes would be exceeded (exit 2).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stderr)
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}

func run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("recorder", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kubeconfig := fs.String("kubeconfig", "", "`file` of the cluster to record (required)")
	out := fs.String("out", "", "write the JSON lines to `file` (required; created or truncated)")
	var lim Limits
	fs.Int64Var(&lim.MaxLines, "max-lines", 10_000_000, "stop with an error before writing more than `n` lines")
	fs.Int64Var(&lim.MaxBytes, "max-bytes", 1<<30, "stop with an error before writing more than `n` bytes")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *kubeconfig == "" || *out == "" {
		return errors.New("recorder: -kubeconfig and -out are required (see -h)")
	}
	if lim.MaxLines <= 0 || lim.MaxBytes <= 0 {
		return errors.New("recorder: -max-lines and -max-bytes must be positive")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fmt.Errorf("recorder: %w", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("recorder: %w", err)
	}
	f, err := os.Create(*out)
	if err != nil {
		return fmt.Errorf("recorder: %w", err)
	}
	rec := NewRecorder(f, lim, time.Now)
	probe := serverDate(ctx, cfg)
	logged := func() (time.Time, time.Time, error) {
		date, received, err := probe()
		if err != nil {
			fmt.Fprintf(stderr, "recorder: the apiserver's Date is unknown (%v): the recording's clock line has none\n", err)
		}
		return date, received, err
	}
	if err := rec.Clock(logged); err != nil {
		f.Close()
		return err
	}
	err = rec.Run(ctx, cs)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("recorder: %w", cerr)
	}
	return err
}

// serverDate returns a function that asks the apiserver for /version and
// returns its Date header and when the response arrived.
func serverDate(ctx context.Context, cfg *rest.Config) func() (date, received time.Time, err error) {
	return func() (time.Time, time.Time, error) {
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			return time.Time{}, time.Time{}, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+"/version", nil)
		if err != nil {
			return time.Time{}, time.Time{}, err
		}
		resp, err := hc.Do(req)
		received := time.Now()
		if err != nil {
			return time.Time{}, time.Time{}, err
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		d, err := http.ParseTime(resp.Header.Get("Date"))
		return d, received, err
	}
}
