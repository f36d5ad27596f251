package audit

import (
	"io"
	"runtime"
	"strings"
	"testing"
	"time"
)

// BenchmarkReader reads a generated in-memory log of kubelet Lease
// renewals at level Metadata (about 600 bytes a line), from one input and
// from three (HA apiservers), plain and inside an Azure envelope.
func BenchmarkReader(b *testing.B) {
	const n = 20000
	plain := leaseLog(n)
	var third [3]strings.Builder
	for i, l := range strings.SplitAfter(plain, "\n") {
		third[i%3].WriteString(l)
	}
	var azure strings.Builder
	for _, l := range strings.Split(strings.TrimSuffix(plain, "\n"), "\n") {
		azure.WriteString(`{"category":"kube-audit","properties":{"log":` + quote(l) + `,"stream":"stdout"},"time":"2026-01-01T00:00:00Z"}` + "\n")
	}
	for _, bc := range []struct {
		name   string
		inputs []string
	}{
		{"files=1", []string{plain}},
		{"files=3", []string{third[0].String(), third[1].String(), third[2].String()}},
		{"files=1/azure", []string{azure.String()}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var bytes int64
			for _, in := range bc.inputs {
				bytes += int64(len(in))
			}
			b.SetBytes(bytes)
			b.ReportAllocs()
			events := 0
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			for b.Loop() {
				names := make([]string, len(bc.inputs))
				rs := make([]io.Reader, len(bc.inputs))
				for i, in := range bc.inputs {
					names[i] = "f"
					rs[i] = strings.NewReader(in)
				}
				r, err := NewReader(names, rs, Limits{})
				if err != nil {
					b.Fatal(err)
				}
				for {
					_, err := r.Next()
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					events++
				}
			}
			runtime.ReadMemStats(&m1)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(events), "ns/event")
			b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/float64(events), "allocs/event")
			b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/float64(events), "B/event")
			b.ReportMetric(float64(events)/float64(b.N), "events/op")
		})
	}
}

// BenchmarkDecode is the line decoder alone on one Lease renewal.
func BenchmarkDecode(b *testing.B) {
	line := []byte(leaseLine(idFor(1), "ResponseComplete", at(time.Second), 42))
	d := newDecoder()
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.line(line); err != nil || d.out[0].ev == nil {
			b.Fatal(err, d.out)
		}
	}
}

// BenchmarkScanString is the string scan alone on a request URI.
func BenchmarkScanString(b *testing.B) {
	line := []byte(`"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/node-0042?timeout=10s"`)
	var s scanner
	for b.Loop() {
		s.reset(line)
		if _, _, err := s.rawString(); err != nil {
			b.Fatal(err)
		}
	}
}
