//go:build race

package audit

func init() { raceEnabled = true }
