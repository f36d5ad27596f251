package controller

import (
	"errors"
	"os"
	"regexp"
	"testing"
)

// readmeYAML is a YAML block of the README, optionally followed by a plain
// block: a configuration file and the error LoadConfig returns for it.
var readmeYAML = regexp.MustCompile("```yaml\n([^`]*)```(\n\n```\n([^`]*)\n```)?")

// TestREADMEErrors: every configuration the README shows loads, and every
// error it shows is the one LoadConfig returns for the file above it. (The
// README used to name a field, zones.burst, that did not exist.)
func TestREADMEErrors(t *testing.T) {
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	errs := 0
	for _, ex := range readmeYAML.FindAllStringSubmatch(string(data), -1) {
		file, want := ex[1], ex[3]
		_, err := LoadConfig([]byte(file))
		switch {
		case ex[2] == "" && err != nil:
			t.Errorf("the README's configuration\n%s\ndoes not load: %v", file, err)
		case ex[2] != "" && (!errors.Is(err, ErrInvalidConfig) || err.Error() != want):
			t.Errorf("README shows, for\n%s\nthe error\n  %s\nLoadConfig returns\n  %v", file, want, err)
		}
		if ex[2] != "" {
			errs++
		}
	}
	if errs < 5 {
		t.Errorf("%d error examples in the README, want at least 5", errs)
	}
}
