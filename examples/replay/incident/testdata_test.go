package incident

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kubelifecycle/lifecycle/examples/replay/audit"
)

var update = flag.Bool("update", false, "rewrite ../testdata from the generator")

// shipped is the log shipped in examples/replay/testdata: n1's kubelet is
// silent from +50s to +2m20s; the recorded controller ran with
// --node-monitor-grace-period=40s and its pods tolerate unreachable for
// 30s, so they were evicted at +2m10s, ten seconds before it came back.
func shipped(level string) *gen {
	return &gen{nodes: 3, podsPerNode: 2, duration: 4 * time.Minute, stop: "n1", stopAt: 55 * time.Second, resumeAt: 140 * time.Second,
		unknownAt: 100 * time.Second, noExecAt: 100*time.Second + 100*time.Millisecond, evictAt: 130*time.Second + 100*time.Millisecond,
		untaintAt: 145 * time.Second, tolSeconds: 30, level: level}
}

// jsonLines writes events as audit.k8s.io/v1 Event JSON lines.
func jsonLines(t testing.TB, evs []audit.Event) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, e := range evs {
		line := struct {
			Kind       string `json:"kind"`
			APIVersion string `json:"apiVersion"`
			audit.Event
		}{"Event", "audit.k8s.io/v1", e}
		j, err := json.Marshal(line)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func TestShippedTestdata(t *testing.T) {
	for _, tt := range []struct{ file, level string }{
		{"synthetic-outage.audit.jsonl", "Request"},
		{"synthetic-outage-metadata.audit.jsonl", "Metadata"},
	} {
		want := jsonLines(t, shipped(tt.level).build())
		path := filepath.Join("..", "testdata", tt.file)
		if *update {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (regenerate with go test -run TestShippedTestdata -update)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the generator's output (regenerate with go test -run TestShippedTestdata -update)", path)
		}
		if len(got) > 100_000 {
			t.Errorf("%s: %d bytes, want under 100 KB", path, len(got))
		}
	}
}

// TestWriteBigLog writes a large synthetic log for measurements when
// REPLAY_BIG_LOG names the file (REPLAY_BIG_NODES nodes, 1000 by default,
// for REPLAY_BIG_HOURS hours, 1 by default).
func TestWriteBigLog(t *testing.T) {
	path := os.Getenv("REPLAY_BIG_LOG")
	if path == "" {
		t.Skip("REPLAY_BIG_LOG not set")
	}
	nodes := 1000
	if s := os.Getenv("REPLAY_BIG_NODES"); s != "" {
		if _, err := fmt.Sscan(s, &nodes); err != nil {
			t.Fatal(err)
		}
	}
	hours := 1
	if s := os.Getenv("REPLAY_BIG_HOURS"); s != "" {
		if _, err := fmt.Sscan(s, &hours); err != nil {
			t.Fatal(err)
		}
	}
	g := &gen{nodes: nodes, podsPerNode: 10, duration: time.Duration(hours) * time.Hour, stop: "n1", stopAt: 5 * time.Minute,
		unknownAt: 6 * time.Minute, noExecAt: 6 * time.Minute, evictAt: 11 * time.Minute}
	if err := os.WriteFile(path, jsonLines(t, g.build()), 0o644); err != nil {
		t.Fatal(err)
	}
}
