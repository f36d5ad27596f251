// Package audit reads kube-apiserver audit logs (audit.k8s.io/v1 Event,
// one JSON object per line) as one stream of completed requests in
// stageTimestamp order, for replaying a recorded outage through the node
// lifecycle decision path. The event format is that of Kubernetes v1.37.2
// (staging/src/k8s.io/apiserver/pkg/apis/audit/v1/types.go); Event keeps the
// fields a replay uses.
//
// # The caller loop
//
//	r, err := audit.Open(files, audit.Limits{}) // plain or gzip, HA apiservers' files together
//	if err != nil { ... }
//	defer r.Close()
//	for {
//		e, err := r.Next()
//		if err == io.EOF {
//			break
//		}
//		var ie *audit.InputError
//		if errors.As(err, &ie) { // one input ended early (truncated gzip, read error)
//			log.Print(err)  // its events so far were returned; the others go on
//			continue
//		}
//		if err != nil {
//			return err // a limit, an unsupported export, not an audit log
//		}
//		replay(e) // e is new: keep it if needed
//	}
//	st := r.Stats() // what was read, skipped (by reason, with positions) and warned about
//
// # Guarantees
//
//   - Streaming: memory is bounded by the Limits, not by the log's length. Lines
//     are read with a 64 KiB buffer per input; a line longer than
//     Limits.MaxLineBytes is discarded up to its newline without being held
//     (a multi-gigabyte line costs at most MaxLineBytes).
//   - Order: events come out in non-decreasing stageTimestamp order, merged
//     across inputs by a k-way heap merge (O(log inputs) per event). Ties
//     come out in input order, then line order.
//   - Every line is accounted for: returned, or counted in Stats.Skipped by
//     reason with the first MaxSkipSamples positions ("file:line") and why.
//   - Every hostile input ends in a bounded error naming the limit
//     (errors.Is(err, ErrLimit); the message says "Limits.Field=value") or in
//     a counted skip; never a panic and never unbounded memory.
//   - No goroutines, no clock: the Reader never reads the time of day; all
//     time comes from the events. A Reader is not safe for concurrent use.
//
// # Stages
//
// Only events at stage ResponseComplete, or without a stage, are returned,
// and also Panic: a Panic event is the only record of a request whose
// handler panicked, so it is a completed (failed) request (its
// responseStatus is 500). RequestReceived and ResponseStarted events are
// counted as SkipStage: the same request's ResponseComplete event says
// everything they say (the shipped Policy omits RequestReceived; a watch's
// ResponseStarted is followed by its ResponseComplete when it ends).
//
// # Order and the reorder window
//
// The apiserver writes an event when the request completes, so concurrent
// requests interleave and one file is only roughly ordered. Each input has
// a reorder buffer (a min-heap): an event is released once an event
// Limits.ReorderWindow (5s) newer has been read from the same input, or the
// input has ended. An event older than one already released from its input
// cannot be placed any more and is a SkipOutOfOrder ("out of order by X,
// beyond ReorderWindow", naming the newest line read: one line far in the
// future releases everything before it and makes the lines after it late);
// a late event still newer than what was released is kept. More than
// Limits.MaxBuffered events (or Limits.MaxBufferedBytes of them) waiting in
// the buffers is an error: a burst denser than the window allows.
//
// The stream is anchored at the earliest of the first events read (up to 16
// per input), leaving out those more than Limits.MaxSpan from their median,
// so that a wild first line (an apiserver started before its clock was set)
// does not anchor the stream. An event more than MaxSpan (31 days) after
// the anchor, or more than ReorderWindow before it, is a SkipOutOfSpan
// naming the anchor's position. A zero stageTimestamp is a SkipZeroTime.
// As nothing is returned before the anchor is chosen, the first events read
// (up to 16 per input, fewer when Limits.MaxBuffered is small) come out in
// order whatever their distance.
//
// # Duplicates
//
// The same file given twice, overlapping exports, or one event in two
// envelopes: a repeat of an (auditID, stage) already returned at the same
// stageTimestamp is a SkipDuplicate naming the first copy. Copies of one
// event have the same stageTimestamp, and the merge returns equal
// timestamps together, so only the keys of the current timestamp are kept
// (at most Limits.MaxDedup). An auditID repeated at another time is not a
// copy (clients may set the Audit-ID header) and is returned.
//
// # Errors
//
//	Error                          Ends the stream  Meaning
//	io.EOF                         yes              every input read; Stats().Warnings is complete
//	*InputError (ErrTruncated)     no               one input ended early, after its events so far: a gzip stream
//	                                                cut short or a read error; names the file and the last line read;
//	                                                also in Stats().Files[i].Err and Warnings
//	ErrLimit                       yes              a limit was reached; the message names Limits.Field=value
//	ErrNotAuditLog (and ErrLimit)  yes              no audit event in an input's first Limits.SniffLines lines, or in a
//	                                                whole shorter input: "no audit event in the first N lines of F"
//	ErrUnsupportedFormat           yes              a recognised export that cannot be replayed (GKE)
//
// After an error that ends the stream, Next returns it again.
//
// # Limits and defaults
//
// Zero fields of Limits take these defaults (DefaultLimits); negative ones
// are an error.
//
//	Field             Default      Bounds
//	MaxLineBytes      16 MiB       the longest line decoded; longer lines are skipped in bounded memory
//	ReorderWindow     5s           how far out of order one input's lines may be
//	MaxBuffered       100000       events held in the reorder buffers (about 1 KiB each at Metadata)
//	MaxBufferedBytes  1 GiB        JSON text of the events held in the reorder buffers
//	MaxSpan           31 days      how far after the anchor an event may be
//	MaxDedup          65536        (auditID, stage) keys kept at one stageTimestamp
//	MaxEvents         100 million  events returned
//	MaxFiles          128          inputs (each holds up to two 64 KiB buffers, plus gzip state)
//	MaxSkips          1000         bad lines (malformed, too long, not an event, out of order or span,
//	                               zero time) over all inputs; filtered lines do not count
//	SniffLines        100          lines of an input read before it must have shown an audit event
//	OverlapSlack      1m           gap between inputs' time ranges still taken as contiguous
//
// Fixed bounds: 8 skip samples per reason, 1024 resources in
// Stats.Resources, 8192 interned strings of at most 256 bytes, JSON nesting
// depth 10000, 10000 logEvents in a CloudWatch subscription record.
//
// # Formats
//
// The envelope is detected per line (so one file may mix them; Stats reports
// the first per file and warns when a file mixes) and gzip by its magic
// bytes, not by the file name.
//
//	Source                                               Read   Format / outcome
//	kube-apiserver --audit-log-path, json format         yes    FormatPlain
//	  (or a webhook receiver writing one event per line)
//	AKS: Azure diagnostic settings, categories           yes    FormatAzure; other categories are SkipOtherLog
//	  kube-audit and kube-audit-admin (storage account,
//	  Event Hubs capture)
//	EKS: CloudWatch Logs export task to S3               yes    FormatCloudWatchExport
//	EKS: aws logs filter-log-events, Logs Insights       yes    FormatCloudWatchMessage
//	  exports, flattened one event per line
//	EKS: CloudWatch Logs subscription records            yes    FormatCloudWatchSubscription; CONTROL_MESSAGE is SkipControl
//	  (Kinesis, Firehose), newline-delimited
//	GKE: Cloud Logging (Logs Explorer, sinks,            no     ErrUnsupportedFormat: the events were converted to
//	  BigQuery, gcloud logging read)                            google.cloud.audit.AuditLog; stage, level and objects are lost
//	webhook batches (kind EventList)                     no     SkipNotEvent
//	audit.k8s.io/v1beta1 events                          no     SkipNotEvent
//	--audit-log-format=legacy (text)                     no     SkipMalformed, then ErrNotAuditLog
//
// What a line looks like in each:
//
//	FormatPlain                   {"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata",...}
//	FormatAzure                   {"category":"kube-audit","properties":{"log":"<event as a JSON string>",...},...}
//	FormatCloudWatchExport        2026-01-01T00:00:00.123Z {"kind":"Event",...}
//	FormatCloudWatchMessage       {"message":"<event as a JSON string>",...} or {"@message":{...event...},...}
//	FormatCloudWatchSubscription  {"messageType":"DATA_MESSAGE",...,"logEvents":[{"id":"..","message":"<event>"},...]}
//	FormatGKE                     {"protoPayload":{"@type":"type.googleapis.com/google.cloud.audit.AuditLog",...},...}
//
// In a CloudWatch or Azure envelope, a payload that is not a JSON object
// (another log stream of the same log group, such as the kube-apiserver or
// authenticator logs) is SkipOtherLog, which is not a bad line. Firehose
// records must be newline-delimited; the events of one subscription record
// share its line in Event.Source (skips name logEvents[i]). Unknown resources and kinds inside
// events are returned (the consumer filters); Stats.Resources counts the
// returned events by resource.
//
// The JSON decoder is this package's own (a plain Lease renewal decodes in
// one pass, several times faster than encoding/json). It decodes what
// encoding/json decodes into Event, checked by TestDecodeMatchesEncodingJSON
// and FuzzDecode, except: object keys match exactly (encoding/json also
// matches them case insensitively), a repeated key replaces the earlier
// value (encoding/json merges repeated objects), and a null requestObject
// or responseObject is nil (encoding/json keeps the text null).
//
// # What each audit level gives the replay
//
// The shipped Policy (policy.yaml, embedded) logs what the node lifecycle
// decisions need at the lowest level that shows it.
//
//	Level            Carries                        The replay can rebuild
//	None             nothing                        nothing: the request never happened for the replay
//	Metadata         who, verb, object, response    kubelet Lease renewals (the controller only checks the renew time moved),
//	                 code, timestamps               node and lease watch lifetimes (a watch's ResponseComplete is its end),
//	                                                that a node or pod was written, a pod deleted (evicted), failed writes
//	Request          + the request body             kubelet Ready/MemoryPressure/... conditions and lastHeartbeatTime
//	                                                (nodes/status), node labels (zone) and the kubelet's taints,
//	                                                pod tolerations and node binding (create, pods/binding),
//	                                                the controller's taint patches with timeAdded as sent
//	RequestResponse  + the response body            the node or pod as stored after a controller's patch (taints with
//	                                                timeAdded, conditions as merged), the Events it recorded
//
// A Lease renewal at Request or above adds nothing the replay uses (and is
// the bulk of the log: one per node every 10s). Kubelet node status at
// Metadata would show when the kubelet posted, but not whether it said
// Ready. Controller taints at Metadata show that the node changed, not
// which taint was added or when.
//
// # Collecting the log
//
// kube-apiserver flags:
//
//	--audit-policy-file=/etc/kubernetes/audit/policy.yaml   # this package's Policy
//	--audit-log-path=/var/log/kubernetes/audit/audit.log
//	--audit-log-format=json        # the default; legacy text is not readable here
//	--audit-log-maxsize=200        # MB before rotation; give Open all rotated files
//	--audit-log-maxbackup=20
//	--audit-log-compress=true      # rotated files gzip-compressed: Open reads them
//
// --audit-log-mode=blocking is not required: it is already the log
// backend's default. Batch mode also works, but drops events when its
// buffer is full (counted in apiserver_audit_error_total), which the replay
// sees as a gap. Each apiserver of an HA control plane writes its own log;
// give Open all of them.
//
// kubeadm (kubeadm.k8s.io/v1beta4, kubeadm 1.31 and later, where extraArgs is
// a list of name/value pairs; v1beta3 took a map):
//
//	apiVersion: kubeadm.k8s.io/v1beta4
//	kind: ClusterConfiguration
//	apiServer:
//	  extraArgs:
//	  - name: audit-policy-file
//	    value: /etc/kubernetes/audit/policy.yaml
//	  - name: audit-log-path
//	    value: /var/log/kubernetes/audit/audit.log
//	  - name: audit-log-maxsize
//	    value: "200"
//	  - name: audit-log-maxbackup
//	    value: "20"
//	  extraVolumes:
//	  - name: audit-policy
//	    hostPath: /etc/kubernetes/audit
//	    mountPath: /etc/kubernetes/audit
//	    readOnly: true
//	    pathType: DirectoryOrCreate
//	  - name: audit-log
//	    hostPath: /var/log/kubernetes/audit
//	    mountPath: /var/log/kubernetes/audit
//	    pathType: DirectoryOrCreate
//
// kind (the same patch, plus mounting policy.yaml into the node; write the
// patch in the form of the kubeadm API your node image uses):
//
//	kind: Cluster
//	apiVersion: kind.x-k8s.io/v1alpha4
//	nodes:
//	- role: control-plane
//	  extraMounts:
//	  - hostPath: ./policy.yaml
//	    containerPath: /etc/kubernetes/audit/policy.yaml
//	    readOnly: true
//	  kubeadmConfigPatches:
//	  - |
//	    kind: ClusterConfiguration
//	    apiServer:
//	      extraArgs:
//	      - name: audit-policy-file
//	        value: /etc/kubernetes/audit/policy.yaml
//	      - name: audit-log-path
//	        value: /var/log/kubernetes/audit/audit.log
//	      extraVolumes:
//	      - name: audit-policy
//	        hostPath: /etc/kubernetes/audit
//	        mountPath: /etc/kubernetes/audit
//	        readOnly: true
//	      - name: audit-log
//	        hostPath: /var/log/kubernetes/audit
//	        mountPath: /var/log/kubernetes/audit
//
// Then: docker cp kind-control-plane:/var/log/kubernetes/audit/audit.log .
//
// Managed clusters use a fixed policy this package cannot change: AKS (the
// kube-audit category is every request, kube-audit-admin leaves out get
// and list) and EKS (the "audit" control plane log type). Before relying
// on a replay from them, check that the kubelets' Lease renewals and
// nodes/status writes are in the export (Stats.Resources counts the events
// by resource).
//
// # Performance
//
// BenchmarkReader (go test -run x -bench . -benchmem), 20000 Lease renewals
// at Metadata of about 600 bytes, on the 2-core AMD EPYC development VM
// shared with other work: about 3.5 µs and 8 allocations (about 1 KiB) per
// event for one plain input or three merged, about 5.5 µs in the Azure
// envelope (the event is unescaped from a JSON string first).
// encoding/json alone takes about 14 µs to decode the same line there.
package audit
