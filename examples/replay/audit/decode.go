package audit

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
)

// slot is the outcome for one event of a line: an event (ev != nil) or a
// skip.
type slot struct {
	ev        *Event
	reason    SkipReason
	err       error  // for SkipMalformed and SkipNotEvent
	stage     string // for SkipStage
	sub       int    // index in a subscription record's logEvents, or -1
	inRecords bool   // sub indexes Azure records, not logEvents
	size      int    // the length of the event's JSON text
}

// rawMsg is an envelope's payload: a JSON string's raw text or an object.
type rawMsg struct {
	raw      []byte
	plain    bool   // raw is the string's value (no escapes)
	obj      bool   // raw is an object, not a string
	category string // an Azure record's category
}

// envelope collects the fields of the outer object that name an export
// format.
type envelope struct {
	kind, apiVersion string
	category         string
	log              rawMsg
	hasLog           bool
	message          rawMsg
	hasMessage       bool
	messageType      string
	hasRecords       bool // Azure {"records":[...]} (Event Hubs)
	proto            bool
}

// decoder turns one line into slots. It is reused for every line of a
// Reader; the events it returns are fresh.
type decoder struct {
	s, inner  scanner
	in        interner
	buf       []byte // an envelope payload's unescaped value
	msgs      []rawMsg
	scratch   Event
	pend      []pending
	cat       []byte    // materialize's buffer
	groups    []string  // the groups being decoded
	ref       ObjectRef // scratch.ObjectRef points here while decoding
	statusBuf Status    // scratch.ResponseStatus points here while decoding
	out       []slot
}

// eventBlock allocates an event with its ObjectRef and Status at once.
type eventBlock struct {
	ev     Event
	ref    ObjectRef
	status Status
	groups [4]string // User.Groups when there are at most 4
}

// pending is a string field whose value is still the raw text of the line:
// the fields unique to each event (auditID, requestURI, uid, status
// message) are made into strings only for an event that is returned, all
// with one allocation.
type pending struct {
	dst *string
	raw []byte
}

// deferStr reads a string or null ("") value into *dst, now or at
// materialize. A repeated key replaces the pending value, so d.pend holds
// at most one entry per field.
func (d *decoder) deferStr(s *scanner, dst *string) error {
	if s.peek() == 'n' {
		d.drop(dst)
		*dst = ""
		return s.null()
	}
	raw, plain, err := s.rawString()
	if err != nil {
		return err
	}
	if !plain {
		d.drop(dst)
		*dst = string(unescape(nil, raw))
		return nil
	}
	*dst = ""
	for i := range d.pend {
		if d.pend[i].dst == dst {
			d.pend[i].raw = raw
			return nil
		}
	}
	d.pend = append(d.pend, pending{dst, raw})
	return nil
}

// drop forgets the pending value of dst.
func (d *decoder) drop(dst *string) {
	for i := range d.pend {
		if d.pend[i].dst == dst {
			d.pend = slices.Delete(d.pend, i, i+1)
			return
		}
	}
}

// nonEmpty reports whether *dst is or will be non-empty.
func (d *decoder) nonEmpty(dst *string) bool {
	for _, p := range d.pend {
		if p.dst == dst {
			return len(p.raw) > 0
		}
	}
	return *dst != ""
}

// materialize sets the pending fields from one string.
func (d *decoder) materialize() {
	d.cat = d.cat[:0]
	for _, p := range d.pend {
		d.cat = append(d.cat, p.raw...)
	}
	all := string(d.cat)
	for _, p := range d.pend {
		*p.dst, all = all[:len(p.raw)], all[len(p.raw):]
	}
	d.pend = d.pend[:0]
}

// noGroups is an empty, non-nil groups list ("groups":[]).
var noGroups = []string{}

func newDecoder() *decoder {
	d := &decoder{}
	d.s.in = &d.in
	d.inner.in = &d.in
	return d
}

// maxLogEvents bounds the events of one CloudWatch subscription record
// (CloudWatch Logs puts at most 10000 log events in a batch).
const maxLogEvents = 10000

var (
	errNotObject = errors.New("not a JSON object")
	gkeType      = []byte("google.cloud.audit.AuditLog")
)

// line decodes one non-blank line. It returns the envelope found and fills
// d.out; a non-nil error is fatal (an unsupported export).
func (d *decoder) line(line []byte) (Format, error) {
	d.out = d.out[:0]
	d.msgs = d.msgs[:0]
	switch c := line[0]; {
	case c == '{':
	case '0' <= c && c <= '9':
		// CloudWatch Logs export to S3: "<RFC3339 timestamp> <message>".
		sp := bytes.IndexByte(line, ' ')
		if sp < 0 || sp > 40 {
			d.skip(SkipMalformed, errNotObject)
			return FormatUnknown, nil
		}
		if _, err := parseTime(line[:sp]); err != nil {
			d.skip(SkipMalformed, fmt.Errorf("not a JSON object and not a CloudWatch export line: %v", err))
			return FormatUnknown, nil
		}
		// Another log stream of the log group (text) is SkipOtherLog.
		d.payload(rawMsg{raw: line[sp+1:], plain: true}, -1)
		return FormatCloudWatchExport, nil
	default:
		d.skip(SkipMalformed, errNotObject)
		return FormatUnknown, nil
	}
	var env envelope
	d.scratch = Event{}
	d.pend = d.pend[:0]
	d.s.reset(line)
	err := d.object(&d.s, &d.scratch, &env, true)
	if err == nil {
		err = d.s.end()
	}
	if err != nil {
		d.skip(SkipMalformed, err)
		return FormatUnknown, nil
	}
	switch {
	case env.proto:
		return FormatGKE, fmt.Errorf("%w: GKE Cloud Logging export (protoPayload google.cloud.audit.AuditLog): the audit events were converted and cannot be replayed; use the apiserver's own audit log", ErrUnsupportedFormat)
	case env.messageType != "":
		switch env.messageType {
		case "CONTROL_MESSAGE":
			d.out = append(d.out, slot{reason: SkipControl, sub: -1})
		case "DATA_MESSAGE":
			for i, m := range d.msgs {
				d.payload(m, i)
			}
			if len(d.msgs) == 0 {
				d.out = append(d.out, slot{reason: SkipOtherLog, err: errors.New("CloudWatch subscription record without logEvents"), sub: -1})
			}
		default:
			d.skip(SkipNotEvent, fmt.Errorf("CloudWatch subscription record with messageType %q", env.messageType))
		}
		return FormatCloudWatchSubscription, nil
	case env.hasLog:
		d.azure(env.category, env.log, -1)
		return FormatAzure, nil
	case env.hasRecords:
		for i, m := range d.msgs {
			d.azure(m.category, m, i)
		}
		for i := range d.out {
			d.out[i].inRecords = true
		}
		if len(d.msgs) == 0 {
			d.out = append(d.out, slot{reason: SkipOtherLog, err: errors.New("records without any record (Azure)"), sub: -1})
		}
		return FormatAzure, nil
	case env.hasMessage:
		d.payload(env.message, -1)
		return FormatCloudWatchMessage, nil
	}
	d.finish(&d.scratch, env.kind, env.apiVersion, -1, len(line))
	return FormatPlain, nil
}

// azure decodes the properties.log of an Azure resource log record.
func (d *decoder) azure(category string, log rawMsg, sub int) {
	if category != "" && category != "kube-audit" && category != "kube-audit-admin" {
		d.out = append(d.out, slot{reason: SkipOtherLog, err: fmt.Errorf("diagnostic category %q (Azure)", category), sub: sub})
		return
	}
	d.payload(log, sub)
}

func (d *decoder) skip(reason SkipReason, err error) {
	d.out = append(d.out, slot{reason: reason, err: err, sub: -1})
}

// payload decodes an envelope's payload as an event. A payload that is not
// a JSON object is another log stream of the same export (SkipOtherLog).
func (d *decoder) payload(m rawMsg, sub int) {
	b := m.raw
	if !m.obj && !m.plain {
		d.buf = unescape(d.buf[:0], m.raw)
		b = d.buf
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		d.out = append(d.out, slot{reason: SkipOtherLog, err: errors.New("payload is not a JSON object"), sub: sub})
		return
	}
	d.event(b, sub)
}

// event decodes b as a plain event.
func (d *decoder) event(b []byte, sub int) {
	var env envelope
	d.scratch = Event{}
	d.pend = d.pend[:0]
	d.inner.reset(b)
	err := d.object(&d.inner, &d.scratch, &env, false)
	if err == nil {
		err = d.inner.end()
	}
	if err != nil {
		d.out = append(d.out, slot{reason: SkipMalformed, err: err, sub: sub})
		return
	}
	d.finish(&d.scratch, env.kind, env.apiVersion, sub, len(b))
}

// finish checks a decoded event and appends its slot.
func (d *decoder) finish(ev *Event, kind, apiVersion string, sub, size int) {
	switch {
	case kind != "" && kind != "Event":
		d.out = append(d.out, slot{reason: SkipNotEvent, err: fmt.Errorf("kind %q", kind), sub: sub})
		return
	case apiVersion != "" && apiVersion != "audit.k8s.io/v1":
		d.out = append(d.out, slot{reason: SkipNotEvent, err: fmt.Errorf("apiVersion %q is not audit.k8s.io/v1", apiVersion), sub: sub})
		return
	case kind == "" && !d.nonEmpty(&ev.AuditID):
		d.out = append(d.out, slot{reason: SkipNotEvent, err: errors.New("no kind and no auditID"), sub: sub})
		return
	}
	switch ev.Stage {
	case "", "ResponseComplete", "Panic":
	default:
		d.out = append(d.out, slot{reason: SkipStage, stage: ev.Stage, sub: sub})
		return
	}
	if ev.StageTimestamp.IsZero() {
		d.out = append(d.out, slot{reason: SkipZeroTime, err: errors.New("no stageTimestamp"), sub: sub})
		return
	}
	d.materialize()
	blk := &eventBlock{ev: *ev}
	if g := ev.User.Groups; g != nil {
		if len(g) <= len(blk.groups) {
			n := copy(blk.groups[:], g)
			blk.ev.User.Groups = blk.groups[:n:n]
		} else {
			blk.ev.User.Groups = slices.Clone(g)
		}
	}
	if ev.ObjectRef != nil {
		blk.ref = *ev.ObjectRef
		blk.ev.ObjectRef = &blk.ref
	}
	if ev.ResponseStatus != nil {
		blk.status = *ev.ResponseStatus
		blk.ev.ResponseStatus = &blk.status
	}
	d.out = append(d.out, slot{ev: &blk.ev, sub: sub, size: size})
}

// object decodes an audit event object into ev, and kind and apiVersion
// into env; when outer, also the envelope fields of the export formats.
// Unknown keys are validated and skipped.
func (d *decoder) object(s *scanner, ev *Event, env *envelope, outer bool) error {
	if err := s.open('{'); err != nil {
		if err != errEnd {
			return errNotObject
		}
		return err
	}
	first := true
	for {
		key, ok, err := s.member(&first)
		if err != nil || !ok {
			return err
		}
		switch string(key) {
		case "kind":
			env.kind, err = s.str(true)
		case "apiVersion":
			env.apiVersion, err = s.str(true)
		case "level":
			ev.Level, err = s.str(true)
		case "auditID":
			err = d.deferStr(s, &ev.AuditID)
		case "stage":
			ev.Stage, err = s.str(true)
		case "requestURI":
			err = d.deferStr(s, &ev.RequestURI)
		case "verb":
			ev.Verb, err = s.str(true)
		case "user":
			err = d.user(s, &ev.User)
		case "impersonatedUser":
			if s.peek() == 'n' {
				err = s.null()
				break
			}
			// The user's groups are in d.groups until finish copies
			// them: the impersonated user's get a slice of their own.
			u, shared := &User{}, d.groups
			d.groups = nil
			err = d.user(s, u)
			d.groups = shared
			if err == nil {
				ev.ImpersonatedUser = u
			}
		case "userAgent":
			ev.UserAgent, err = s.str(true)
		case "objectRef":
			ev.ObjectRef, err = d.objectRef(s)
		case "responseStatus":
			ev.ResponseStatus, err = d.status(s)
		case "requestObject":
			ev.RequestObject, err = s.raw()
		case "responseObject":
			ev.ResponseObject, err = s.raw()
		case "requestReceivedTimestamp":
			ev.RequestReceivedTimestamp, err = s.timeValue()
		case "stageTimestamp":
			ev.StageTimestamp, err = s.timeValue()
		case "annotations":
			ev.Annotations, err = d.annotations(s)
		default:
			if outer {
				err = d.envelopeField(s, key, env)
			} else {
				err = s.skip()
			}
		}
		if err != nil {
			if err == errEnd {
				return err
			}
			return fmt.Errorf("field %q: %w", key, err)
		}
	}
}

func (d *decoder) envelopeField(s *scanner, key []byte, env *envelope) error {
	var err error
	switch string(key) {
	case "properties": // Azure diagnostic settings
		if s.peek() != '{' {
			return s.skip()
		}
		if err := s.open('{'); err != nil {
			return err
		}
		first := true
		for {
			k, ok, err := s.member(&first)
			if err != nil || !ok {
				return err
			}
			if string(k) == "log" && s.peek() == '"' {
				env.log.raw, env.log.plain, err = s.rawString()
				env.hasLog = true
			} else {
				err = s.skip()
			}
			if err != nil {
				return err
			}
		}
	case "category":
		if s.peek() == '"' {
			env.category, err = s.str(true)
			return err
		}
		return s.skip()
	case "message", "@message": // CloudWatch
		switch s.peek() {
		case '"':
			env.message.raw, env.message.plain, err = s.rawString()
			env.message.obj = false
			env.hasMessage = true
		case '{':
			start := s.i
			err = s.skip()
			env.message = rawMsg{raw: s.b[start:s.i], obj: true}
			env.hasMessage = true
		default:
			err = s.skip()
		}
		return err
	case "messageType":
		if s.peek() == '"' {
			env.messageType, err = s.str(true)
			return err
		}
		return s.skip()
	case "records": // Azure resource logs through Event Hubs
		if s.peek() != '[' {
			return s.skip()
		}
		if err := s.open('['); err != nil {
			return err
		}
		env.hasRecords = true
		first := true
		for {
			ok, err := s.element(&first)
			if err != nil || !ok {
				return err
			}
			if len(d.msgs) == maxLogEvents {
				return fmt.Errorf("more than %d records", maxLogEvents)
			}
			m, err := d.azureRecord(s)
			if err != nil {
				return err
			}
			d.msgs = append(d.msgs, m)
		}
	case "logEvents":
		if s.peek() != '[' {
			return s.skip()
		}
		if err := s.open('['); err != nil {
			return err
		}
		first := true
		for {
			ok, err := s.element(&first)
			if err != nil || !ok {
				return err
			}
			if len(d.msgs) == maxLogEvents {
				return fmt.Errorf("more than %d logEvents", maxLogEvents)
			}
			if s.peek() != '{' {
				if err := s.skip(); err != nil {
					return err
				}
				d.msgs = append(d.msgs, rawMsg{}) // counted as SkipOtherLog
				continue
			}
			if err := s.open('{'); err != nil {
				return err
			}
			f2 := true
			var m rawMsg
			for {
				k, ok, err := s.member(&f2)
				if err != nil {
					return err
				}
				if !ok {
					break
				}
				if string(k) == "message" && s.peek() == '"' {
					m.raw, m.plain, err = s.rawString()
				} else {
					err = s.skip()
				}
				if err != nil {
					return err
				}
			}
			d.msgs = append(d.msgs, m)
		}
	case "protoPayload":
		env.proto = true
		return s.skip()
	case "@type":
		if s.peek() == '"' {
			raw, _, err := s.rawString()
			if bytes.Contains(raw, gkeType) {
				env.proto = true
			}
			return err
		}
		return s.skip()
	}
	return s.skip()
}

// azureRecord reads one record of an Azure {"records":[...]} message: its
// category and properties.log. A record that is not an object, or has no
// log, gives an empty payload (SkipOtherLog).
func (d *decoder) azureRecord(s *scanner) (rawMsg, error) {
	var m rawMsg
	if s.peek() != '{' {
		return m, s.skip()
	}
	if err := s.open('{'); err != nil {
		return m, err
	}
	first := true
	for {
		k, ok, err := s.member(&first)
		if err != nil || !ok {
			return m, err
		}
		switch {
		case string(k) == "category" && s.peek() == '"':
			m.category, err = s.str(true)
		case string(k) == "properties" && s.peek() == '{':
			err = s.open('{')
			f2 := true
			for err == nil {
				var k2 []byte
				k2, ok, err = s.member(&f2)
				if err != nil || !ok {
					break
				}
				if string(k2) == "log" && s.peek() == '"' {
					m.raw, m.plain, err = s.rawString()
				} else {
					err = s.skip()
				}
			}
		default:
			err = s.skip()
		}
		if err != nil {
			return m, err
		}
	}
}

func (d *decoder) user(s *scanner, u *User) error {
	if s.peek() == 'n' {
		return s.null()
	}
	if err := s.open('{'); err != nil {
		return err
	}
	first := true
	for {
		key, ok, err := s.member(&first)
		if err != nil || !ok {
			return err
		}
		switch string(key) {
		case "username":
			u.Username, err = s.str(true)
		case "groups":
			u.Groups, err = d.strings(s)
		default:
			err = s.skip()
		}
		if err != nil {
			return err
		}
	}
}

func (d *decoder) strings(s *scanner) ([]string, error) {
	if s.peek() == 'n' {
		return nil, s.null()
	}
	if err := s.open('['); err != nil {
		return nil, err
	}
	// The list is built in a buffer of the decoder; finish copies it.
	out := d.groups[:0]
	first := true
	for {
		ok, err := s.element(&first)
		if err != nil || !ok {
			d.groups = out
			if len(out) == 0 {
				out = noGroups
			}
			return out, err
		}
		v, err := s.str(true)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
}

func (d *decoder) objectRef(s *scanner) (*ObjectRef, error) {
	if s.peek() == 'n' {
		return nil, s.null()
	}
	if err := s.open('{'); err != nil {
		return nil, err
	}
	o := &d.ref
	*o = ObjectRef{}
	d.drop(&o.UID) // a repeated objectRef replaces the earlier one
	first := true
	for {
		key, ok, err := s.member(&first)
		if err != nil || !ok {
			return o, err
		}
		switch string(key) {
		case "resource":
			o.Resource, err = s.str(true)
		case "namespace":
			o.Namespace, err = s.str(true)
		case "name":
			o.Name, err = s.str(true)
		case "uid":
			err = d.deferStr(s, &o.UID)
		case "apiGroup":
			o.APIGroup, err = s.str(true)
		case "apiVersion":
			o.APIVersion, err = s.str(true)
		case "subresource":
			o.Subresource, err = s.str(true)
		default:
			err = s.skip()
		}
		if err != nil {
			return nil, err
		}
	}
}

func (d *decoder) status(s *scanner) (*Status, error) {
	if s.peek() == 'n' {
		return nil, s.null()
	}
	if err := s.open('{'); err != nil {
		return nil, err
	}
	st := &d.statusBuf
	*st = Status{}
	d.drop(&st.Message)
	first := true
	for {
		key, ok, err := s.member(&first)
		if err != nil || !ok {
			return st, err
		}
		switch string(key) {
		case "code":
			st.Code, err = s.int()
		case "reason":
			st.Reason, err = s.str(true)
		case "message":
			err = d.deferStr(s, &st.Message)
		default:
			err = s.skip()
		}
		if err != nil {
			return nil, err
		}
	}
}

func (d *decoder) annotations(s *scanner) (map[string]string, error) {
	if s.peek() == 'n' {
		return nil, s.null()
	}
	if err := s.open('{'); err != nil {
		return nil, err
	}
	m := make(map[string]string, 4)
	first := true
	for {
		key, ok, err := s.member(&first)
		if err != nil || !ok {
			return m, err
		}
		k := d.in.get(key)
		v, err := s.str(true)
		if err != nil {
			return nil, err
		}
		m[k] = v
	}
}
