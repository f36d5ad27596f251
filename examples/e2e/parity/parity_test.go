package parity

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// line builds one audit log line.
func line(at time.Duration, ua, verb, resource, ns, name, sub string, code int, req, resp string) string {
	if req == "" {
		req = "null"
	}
	if resp == "" {
		resp = "null"
	}
	return fmt.Sprintf(`{"kind":"Event","stage":"ResponseComplete","verb":%q,"requestURI":"/x","user":{"username":"admin"},"userAgent":%q,`+
		`"objectRef":{"resource":%q,"namespace":%q,"name":%q,"subresource":%q},"responseStatus":{"code":%d},`+
		`"requestObject":%s,"responseObject":%s,"requestReceivedTimestamp":%q,"stageTimestamp":%q}`,
		verb, ua, resource, ns, name, sub, code, req, resp,
		epoch.Add(at).Format(time.RFC3339Nano), epoch.Add(at).Format(time.RFC3339Nano))
}

func node(rv, ready, transition string, taints string) string {
	return fmt.Sprintf(`{"kind":"Node","metadata":{"name":"n1","resourceVersion":%q,"creationTimestamp":"2026-01-01T00:00:00Z"},`+
		`"spec":{"taints":[%s]},"status":{"conditions":[{"type":"Ready","status":%q,"lastTransitionTime":%q,"lastHeartbeatTime":"2026-01-01T00:00:00Z"}]}}`,
		rv, taints, ready, transition)
}

func trace(t *testing.T, ua string, lines ...string) Trace {
	t.Helper()
	evs, err := ParseAuditLog(strings.NewReader(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := BuildTrace(evs, func(e *AuditEvent) bool { return e.UserAgent == ua }, epoch.Add(10*time.Second), epoch.Add(11*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func sideLines(ua string, unknownAt time.Duration, taint string, msg string) []string {
	created := node("1", "True", "2026-01-01T00:00:00Z", "")
	return []string{
		line(0, "test", "create", "nodes", "", "n1", "", 201, "", created),
		line(unknownAt, ua, "update", "nodes", "", "n1", "status", 200, "", node("2", "Unknown", epoch.Add(unknownAt).Format(time.RFC3339), "")),
		line(unknownAt+100*time.Millisecond, ua, "patch", "nodes", "", "n1", "", 200,
			`{"metadata":{"resourceVersion":"2"},"spec":{"taints":[{"key":"x","effect":"NoExecute"}]}}`,
			node("3", "Unknown", epoch.Add(unknownAt).Format(time.RFC3339), taint)),
		line(unknownAt, ua, "create", "events", "default", "n1.1", "", 201, "",
			`{"metadata":{"name":"n1.1"},"involvedObject":{"kind":"Node","name":"n1"},"reason":"NodeNotReady","message":"`+msg+`","type":"Normal","source":{"component":"node-controller"},"count":1}`),
		line(unknownAt+time.Second, ua, "patch", "events", "default", "n1.1", "", 200, "",
			`{"metadata":{"name":"n1.1"},"involvedObject":{"kind":"Node","name":"n1"},"reason":"NodeNotReady","message":"`+msg+`","type":"Normal","source":{"component":"node-controller"},"count":2}`),
	}
}

func TestBuildTrace(t *testing.T) {
	tr := trace(t, "kcm", sideLines("kcm", 15*time.Second, `{"key":"x","effect":"NoExecute","timeAdded":"2026-01-01T00:00:15Z"}`, "m")...)
	if len(tr.Writes) != 2 || len(tr.Failed) != 0 || len(tr.Events) != 1 {
		t.Fatalf("trace = %s", tr.Summary())
	}
	st := tr.Writes[0]
	if st.Object != "nodes//n1/status" || st.At != 5*time.Second {
		t.Errorf("status write = %+v", st)
	}
	want := map[string]string{
		"status.conditions[Ready].status":             `"Unknown"`,
		"status.conditions[Ready].lastTransitionTime": TimeValue,
	}
	if fmt.Sprint(st.Changes) != fmt.Sprint(want) || st.Times["status.conditions[Ready].lastTransitionTime"] != 5*time.Second {
		t.Errorf("status changes = %v, times %v; want %v", st.Changes, st.Times, want)
	}
	p := tr.Writes[1]
	if p.Changes["spec.taints[x:NoExecute].timeAdded"] != TimeValue || p.Changes["spec.taints[x:NoExecute].key"] != `"x"` {
		t.Errorf("patch changes = %v", p.Changes)
	}
	if strings.Join(p.Request, ",") != "metadata.resourceVersion,spec.taints[x:NoExecute].effect,spec.taints[x:NoExecute].key" {
		t.Errorf("patch request paths = %v", p.Request)
	}
	if e := tr.Events[0]; e.Key != "Node /n1 NodeNotReady" || e.Count != 2 || e.Source != "node-controller" || e.First != 5*time.Second {
		t.Errorf("event = %+v", e)
	}
}

// An empty patch that changes nothing is counted, not compared; a patch
// with a body that changes nothing is still a write.
func TestBuildTraceEmptyPatch(t *testing.T) {
	created := node("1", "True", "2026-01-01T00:00:00Z", "")
	tr := trace(t, "kcm",
		line(0, "test", "create", "nodes", "", "n1", "", 201, "", created),
		line(12*time.Second, "kcm", "patch", "nodes", "", "n1", "", 200, `{}`, created),
		line(13*time.Second, "kcm", "patch", "nodes", "", "n1", "", 200, `{"metadata":{"labels":null}}`, created),
	)
	if tr.Empty != 1 || len(tr.Writes) != 1 || len(tr.Writes[0].Request) == 0 {
		t.Errorf("trace: %d empty, writes %s; want 1 empty and the patch with a body kept", tr.Empty, tr.Summary())
	}
}

func TestCompare(t *testing.T) {
	taint := `{"key":"x","effect":"NoExecute","timeAdded":"2026-01-01T00:00:15Z"}`
	up := trace(t, "kcm", sideLines("kcm", 15*time.Second, taint, "m")...)
	opts := Options{Tolerance: time.Second, FieldTolerance: time.Second}
	near := trace(t, "ours", sideLines("ours", 15500*time.Millisecond, taint, "m")...)
	if d := Compare(up, near, opts); len(d) != 0 {
		t.Errorf("Compare(same within tolerance) = %v, want none", d)
	}
	if d, what := MaxSkew(up, near, false); d != 500*time.Millisecond {
		t.Errorf("MaxSkew() = %v (%s), want 500ms", d, what)
	}
	late := trace(t, "ours", sideLines("ours", 18*time.Second, `{"key":"x","effect":"NoSchedule"}`, "other")...)
	d := Compare(up, late, opts)
	var ids []string
	for _, x := range d {
		ids = append(ids, x.ID)
	}
	got := strings.Join(ids, "\n")
	for _, want := range []string{
		"write update nodes//n1/status #1 time",
		"write patch nodes//n1 #1 field spec.taints[x:NoExecute].key missing",
		"write patch nodes//n1 #1 field spec.taints[x:NoSchedule].key extra",
		"event Node /n1 NodeNotReady message",
		"event Node /n1 NodeNotReady time",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Compare(late, other taint, other message) lacks %q; got:\n%s", want, got)
		}
	}
	explained, rest := Split(d, []Known{{Pattern: regexp.MustCompile(`^event `), Reason: "r"}})
	if len(explained[0]) != 2 || len(rest) != len(d)-2 {
		t.Errorf("Split() = %v, %v", explained, rest)
	}
	// With Detail, the ID is not enough.
	explained, _ = Split(d, []Known{{Pattern: regexp.MustCompile(`^event `), Detail: regexp.MustCompile(`^never$`), Reason: "r"}})
	if len(explained[0]) != 0 {
		t.Errorf("Split(Detail never matching) explained %v", explained[0])
	}
	if d := Compare(up, trace(t, "nobody", sideLines("kcm", 15*time.Second, taint, "m")...), opts); len(d) != 3 {
		t.Errorf("Compare(up, empty) = %v, want 2 missing writes and 1 missing event", d)
	}
}

func TestOrderFree(t *testing.T) {
	mk := func(ua string, a, b time.Duration, an, bn string) Trace {
		n := func(name, rv, ready string) string {
			return strings.ReplaceAll(node(rv, ready, "2026-01-01T00:00:00Z", ""), `"n1"`, `"`+name+`"`)
		}
		return trace(t, ua,
			line(0, "test", "create", "nodes", "", an, "", 201, "", n(an, "1", "True")),
			line(0, "test", "create", "nodes", "", bn, "", 201, "", n(bn, "1", "True")),
			line(a, ua, "update", "nodes", "", an, "status", 200, "", n(an, "2", "Unknown")),
			line(b, ua, "update", "nodes", "", bn, "status", 200, "", n(bn, "2", "Unknown")))
	}
	up := mk("kcm", 11*time.Second, 15*time.Second, "a", "b")
	ours := mk("ours", 11*time.Second, 15*time.Second, "b", "a") // the other order
	if d := Compare(up, ours, Options{Tolerance: time.Second, OrderFree: true}); len(d) != 0 {
		t.Errorf("Compare(order free) = %v, want none", d)
	}
	if d := Compare(up, ours, Options{Tolerance: time.Second}); len(d) != 2 {
		t.Errorf("Compare(by object) = %v, want 2 time differences", d)
	}
}

func TestParseAuditLogLimits(t *testing.T) {
	if _, err := ParseAuditLog(strings.NewReader("{not json")); err == nil {
		t.Error("ParseAuditLog(bad JSON) = nil error")
	}
	long := `{"stage":"ResponseComplete","requestURI":"` + strings.Repeat("x", MaxLineBytes) + `"}`
	if _, err := ParseAuditLog(strings.NewReader(long)); err == nil || !strings.Contains(err.Error(), "MaxLineBytes") {
		t.Errorf("ParseAuditLog(line > MaxLineBytes) = %v, want an error naming the limit", err)
	}
	evs, err := ParseAuditLog(strings.NewReader(`{"stage":"RequestReceived"}` + "\n\n" + `{"stage":"ResponseComplete","verb":"get"}`))
	if err != nil || len(evs) != 1 || evs[0].Verb != "get" {
		t.Errorf("ParseAuditLog() = %v, %v; want the one ResponseComplete event", evs, err)
	}
}

// Two writes to one node within the tolerance of each other pair in either
// order; the same two writes far apart do not.
func TestCompareConcurrentWrites(t *testing.T) {
	ns := Write{Verb: "patch", Object: "nodes//n1", Changes: map[string]string{"spec.taints[u:NoSchedule].key": `"u"`}, Request: []string{"spec.taints"}}
	ne := Write{Verb: "patch", Object: "nodes//n1", Changes: map[string]string{"spec.taints[u:NoExecute].key": `"u"`}, Request: []string{"spec.taints"}}
	at := func(w Write, d time.Duration) Write { w.At = d; return w }
	opts := Options{Tolerance: time.Second}
	up := Trace{Writes: []Write{at(ns, 5*time.Second), at(ne, 5100*time.Millisecond)}}
	near := Trace{Writes: []Write{at(ne, 5*time.Second), at(ns, 5200*time.Millisecond)}}
	if d := Compare(up, near, opts); len(d) != 0 {
		t.Errorf("Compare(concurrent writes in the other order) = %v, want none", d)
	}
	far := Trace{Writes: []Write{at(ne, 5*time.Second), at(ns, 9*time.Second)}}
	if d := Compare(up, far, opts); len(d) == 0 {
		t.Errorf("Compare(the same writes 4 s apart in the other order) found no difference")
	}
}

// The taint list is atomic: of two concurrent taint patches, the first
// sends its own taint and the second sends both, so in the other order no
// write of one side equals one of the other; the two runs still add up to
// the same thing.
func TestCompareConcurrentWritesOtherRequests(t *testing.T) {
	nsKey, neKey := "spec.taints[u:NoSchedule].key", "spec.taints[u:NoExecute].key"
	w := func(at time.Duration, change string, sent ...string) Write {
		return Write{At: at, Verb: "patch", Object: "nodes//n1", Changes: map[string]string{change: `"u"`},
			Request: append([]string{"metadata.resourceVersion"}, sent...)}
	}
	opts := Options{Tolerance: time.Second}
	up := Trace{Writes: []Write{w(5*time.Second, nsKey, nsKey), w(5010*time.Millisecond, neKey, neKey, nsKey)}}
	for _, tc := range []struct {
		name string
		ours []Write
		want string // the ID of a difference Compare must report; "" for none
	}{
		{"same order", []Write{w(5*time.Second, nsKey, nsKey), w(5050*time.Millisecond, neKey, neKey, nsKey)}, ""},
		{"other order", []Write{w(5*time.Second, neKey, neKey), w(5050*time.Millisecond, nsKey, neKey, nsKey)}, ""},
		// The second patch sends only its own taint: the first one's is dropped.
		{"other order, a taint lost", []Write{w(5*time.Second, neKey, neKey), w(5050*time.Millisecond, nsKey, nsKey)},
			"write patch nodes//n1 #2 request"},
		{"other order, 4 s apart", []Write{w(5*time.Second, neKey, neKey), w(9*time.Second, nsKey, neKey, nsKey)},
			"write patch nodes//n1 #2 time"},
		{"one write for two", []Write{w(5*time.Second, neKey, neKey, nsKey)}, "write patch nodes//n1 #2 missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Compare(up, Trace{Writes: tc.ours}, opts)
			ids := make([]string, len(d))
			for i := range d {
				ids[i] = d[i].ID
			}
			if tc.want == "" && len(d) != 0 || tc.want != "" && !slices.Contains(ids, tc.want) {
				t.Errorf("Compare = %v, want %q", d, tc.want)
			}
		})
	}
}

// A create logged after the update that followed it does not roll the
// object's known state back.
func TestBuildTraceOutOfOrderLog(t *testing.T) {
	created := node("5", "True", "2026-01-01T00:00:00Z", "")
	updated := strings.Replace(node("6", "True", "2026-01-01T00:00:00Z", ""), `"spec":{"taints":[]}`, `"spec":{"taints":[{"key":"k","effect":"NoSchedule"}]}`, 1)
	tr := trace(t, "kcm",
		line(0, "agent", "update", "nodes", "", "n1", "", 200, "", updated),
		line(0, "test", "create", "nodes", "", "n1", "", 201, "", created),
		line(12*time.Second, "kcm", "update", "nodes", "", "n1", "status", 200, "", strings.Replace(updated, `"resourceVersion":"6"`, `"resourceVersion":"7"`, 1)),
	)
	if len(tr.Writes) != 1 || len(tr.Writes[0].Changes) != 0 {
		t.Errorf("writes %s; want the controller's write to change nothing", tr.Summary())
	}
}

// TestPolicyWith: PolicyWith puts its rules after Policy's RequestResponse
// rule and before the final catch-all, in place of the ServiceAccount rule.
func TestPolicyWith(t *testing.T) {
	const sa = "- level: Metadata\n  userGroups: [\"system:serviceaccounts\"]\n"
	if got := PolicyWith(sa); got != Policy {
		t.Errorf("PolicyWith(ServiceAccount rule) = %q, want Policy %q", got, Policy)
	}
	const rule = "- level: Metadata\n  verbs: [\"create\"]\n"
	got := PolicyWith(rule)
	if !strings.HasSuffix(got, `    resources: ["events"]`+"\n"+rule+"- level: None\n") {
		t.Errorf("PolicyWith(%q) = %q, want the rule between the RequestResponse rule and the catch-all", rule, got)
	}
	if strings.Contains(got, "system:serviceaccounts") {
		t.Errorf("PolicyWith(%q) = %q, want no ServiceAccount rule", rule, got)
	}
}

// TestBuildTraceDeviceTaintRules: a DeviceTaintRule's status write (a
// server-side apply, audited as a patch) is traced and reduced to the
// condition fields it changed, against the rule as created; a resource of
// the same name in another API group is not.
func TestBuildTraceDeviceTaintRules(t *testing.T) {
	withGroup := func(l, group string) string {
		return strings.Replace(l, `"objectRef":{`, `"objectRef":{"apiGroup":"`+group+`",`, 1)
	}
	rule := func(rv, cond string) string {
		return `{"kind":"DeviceTaintRule","metadata":{"name":"r","resourceVersion":"` + rv + `","creationTimestamp":"2026-01-01T00:00:00Z"},` +
			`"spec":{"taint":{"key":"k","effect":"NoExecute"}},"status":{` + cond + `}}`
	}
	cond := `"conditions":[{"type":"EvictionInProgress","status":"False","reason":"Completed","message":"1 pod evicted since starting the controller.","observedGeneration":1,"lastTransitionTime":"2026-01-01T00:00:20Z"}]`
	apply := `{"apiVersion":"resource.k8s.io/v1","kind":"DeviceTaintRule","metadata":{"name":"r","uid":"u"},"status":{` + cond + `}}`
	tr := trace(t, "kcm",
		withGroup(line(0, "test", "create", "devicetaintrules", "", "r", "", 201, "", rule("1", "")), "resource.k8s.io"),
		withGroup(line(20*time.Second, "kcm", "patch", "devicetaintrules", "", "r", "status", 200, apply, rule("2", cond)), "resource.k8s.io"),
		withGroup(line(21*time.Second, "kcm", "patch", "devicetaintrules", "", "r", "status", 200, apply, rule("3", cond)), "other.example.com"),
	)
	if len(tr.Writes) != 1 {
		t.Fatalf("trace = %s", tr.Summary())
	}
	w := tr.Writes[0]
	if w.Object != "devicetaintrules//r/status" || w.Verb != "patch" || w.At != 10*time.Second {
		t.Errorf("write = %+v", w)
	}
	want := map[string]string{
		"status.conditions[EvictionInProgress].type":               `"EvictionInProgress"`,
		"status.conditions[EvictionInProgress].status":             `"False"`,
		"status.conditions[EvictionInProgress].reason":             `"Completed"`,
		"status.conditions[EvictionInProgress].message":            `"1 pod evicted since starting the controller."`,
		"status.conditions[EvictionInProgress].observedGeneration": "1",
		"status.conditions[EvictionInProgress].lastTransitionTime": TimeValue,
	}
	if fmt.Sprint(w.Changes) != fmt.Sprint(want) || w.Times["status.conditions[EvictionInProgress].lastTransitionTime"] != 10*time.Second {
		t.Errorf("changes = %v, times %v; want %v", w.Changes, w.Times, want)
	}
	if !slices.Contains(w.Request, "metadata.uid") || !slices.Contains(w.Request, "status.conditions[EvictionInProgress].message") {
		t.Errorf("request paths %v", w.Request)
	}
}

// TestPolicyWithFirst: PolicyWithFirst puts first before the rule that
// logs nothing from kube-node-lease, and is PolicyWith otherwise.
func TestPolicyWithFirst(t *testing.T) {
	const first = "- level: Metadata\n  verbs: [\"get\"]\n"
	const rule = "- level: Metadata\n  verbs: [\"create\"]\n"
	got := PolicyWithFirst(first, rule)
	if !strings.Contains(got, "rules:\n"+first+"- level: None\n  namespaces: [\"kube-node-lease\"]\n") {
		t.Errorf("PolicyWithFirst(%q, %q) = %q, want %q first", first, rule, got, first)
	}
	if want := PolicyWith(rule); strings.Replace(got, first, "", 1) != want {
		t.Errorf("PolicyWithFirst(%q, %q) without %q = %q, want PolicyWith(%q) = %q", first, rule, first, strings.Replace(got, first, "", 1), rule, want)
	}
	if PolicyWithFirst("", rule) != PolicyWith(rule) {
		t.Errorf("PolicyWithFirst(\"\", %q) != PolicyWith(%q)", rule, rule)
	}
}
