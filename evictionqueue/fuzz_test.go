package evictionqueue_test

import (
	"testing"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

// FuzzQueueOps decodes the input into a configuration and a sequence of
// operations (see decodeOps) and checks the queue against the reference
// queue of model_test.go after every one of them.
func FuzzQueueOps(f *testing.F) {
	f.Add([]byte{0})
	f.Add([]byte{0, 0, 0, 0, 1, 2, 0, 0, 2, 0, 2, 0})                    // add a, add b, try, try
	f.Add([]byte{1, 0, 0, 0, 1, 0, 2, 3, 1, 17, 2, 12, 0, 2, 1})         // burst 3, retries
	f.Add([]byte{0, 0, 0, 2, 0, 1, 4, 3, 0, 2, 2, 3, 4, 5, 2, 6, 0, 0})  // re-entrant decisions
	f.Add([]byte{2, 0, 0, 0, 1, 3, 0, 3, 3, 2, 0, 8, 0, 3, 4, 13, 0, 0}) // rate changes, stop, restart
	f.Add([]byte{0, 0, 0, 25, 1, 2, 0, 1, 2, 4, 0, 20, 0, 0})            // clock backwards, clear
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, ops := decodeOps(data)
		checkModel(t, testutil.Epoch, cfg, ops)
	})
}
