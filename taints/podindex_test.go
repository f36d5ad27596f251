package taints

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
)

// TestPodIndexModel: random puts, removes, lookups and reserves agree with
// a Go map, and every slot's tag is its record's (0 for an empty slot).
func TestPodIndexModel(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		rng := rand.New(rand.NewPCG(seed, 0))
		x := newPodIndex()
		model := map[types.NamespacedName]*podRec{}
		key := func() types.NamespacedName {
			return types.NamespacedName{Namespace: "ns" + strconv.Itoa(rng.IntN(3)), Name: "p" + strconv.Itoa(rng.IntN(500))}
		}
		for step := range 20_000 {
			k := key()
			switch op := rng.IntN(10); {
			case op < 5:
				if model[k] == nil {
					r := &podRec{key: k}
					x.put(r)
					model[k] = r
				}
			case op < 8:
				if r := model[k]; r != nil {
					x.remove(r)
					delete(model, k)
				}
			case op < 9:
				x.reserve(rng.IntN(2000))
			default:
				require.Same(t, model[k], x.get(k), "step %d: get(%v)", step, k)
			}
			if step%1000 == 0 {
				checkPodIndex(t, &x, model)
			}
		}
		checkPodIndex(t, &x, model)
	}
}

func checkPodIndex(t *testing.T, x *podIndex, model map[types.NamespacedName]*podRec) {
	t.Helper()
	require.Equal(t, len(model), x.len())
	for k, r := range model {
		require.Same(t, r, x.get(k), "get(%v)", k)
	}
	require.Len(t, x.tags, len(x.slots))
	for i, r := range x.slots {
		if r == nil {
			require.Zero(t, x.tags[i], "slot %d empty", i)
		} else {
			require.Equal(t, tag(x.hash(r.key)), x.tags[i], "slot %d", i)
		}
	}
	require.Nil(t, x.get(types.NamespacedName{Namespace: "none", Name: "none"}))
}

// TestReserve: a reserved index takes n pods without growing, and Reserve
// bounds what it allocates.
func TestReserve(t *testing.T) {
	x := newPodIndex()
	x.reserve(1000)
	slots := len(x.slots)
	require.GreaterOrEqual(t, slots*3, 1000*4)
	for i := range 1000 {
		x.put(&podRec{key: types.NamespacedName{Namespace: "ns", Name: strconv.Itoa(i)}})
	}
	require.Equal(t, slots, len(x.slots), "grew although reserved")

	e, err := NewEvictor(DefaultEvictorConfig())
	require.NoError(t, err)
	e.Reserve(0)
	e.Reserve(-1)
	require.Empty(t, e.pods.slots)
	e.Reserve(10)
	require.Len(t, e.pods.slots, 16)
}
