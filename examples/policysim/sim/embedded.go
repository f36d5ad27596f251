package sim

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
)

//go:embed scenarios/*.yaml
var scenarioFS embed.FS

// DefaultScenario is the embedded scenario that runs without -run or
// -scenario.
const DefaultScenario = "offline-node"

// scenarioOrder is the order -list shows the embedded scenarios in; any
// other embedded file follows, by name.
var scenarioOrder = []string{
	"offline-node", "offline-node-1.2x", "zone-partial", "zone-dark", "all-dark", "flapping-node", "large-cluster", "gke-65k",
	"lease-watch-stall", "xid-storm",
}

// EmbeddedNames returns the names of the embedded scenarios, in -list order.
func EmbeddedNames() []string {
	files, _ := fs.Glob(scenarioFS, "scenarios/*.yaml")
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(path.Base(f), ".yaml"))
	}
	rank := func(n string) int {
		if i := slices.Index(scenarioOrder, n); i >= 0 {
			return i
		}
		return len(scenarioOrder)
	}
	slices.SortStableFunc(names, func(a, b string) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		return strings.Compare(a, b)
	})
	return names
}

// LoadEmbedded parses the embedded scenario name.
func LoadEmbedded(name string) (*Scenario, error) {
	data, err := scenarioFS.ReadFile("scenarios/" + name + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("policysim: no embedded scenario %q (have: %s)", name, strings.Join(EmbeddedNames(), ", "))
	}
	return LoadScenario(name+".yaml", data)
}

// EmbeddedSource returns the YAML text of the embedded scenario name.
func EmbeddedSource(name string) ([]byte, error) {
	return scenarioFS.ReadFile("scenarios/" + name + ".yaml")
}
