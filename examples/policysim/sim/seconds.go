package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"time"
)

// The result types (Summary, Span, ZoneSummary, StateChange, SlowestPod,
// Pending, ZonePending) hold times as time.Duration since the start of the
// run. In JSON every such field is a number of seconds (a nil pointer is
// null), as the -format json output has always had them: their MarshalJSON
// and UnmarshalJSON write and read the struct as encoding/json would, with
// the json tags, except for that conversion.

// MarshalJSON writes the summary with its times in seconds.
func (s Summary) MarshalJSON() ([]byte, error) { return marshalSeconds(s) }

// UnmarshalJSON reads a summary whose times are in seconds.
func (s *Summary) UnmarshalJSON(b []byte) error { return unmarshalSeconds(b, s) }

// MarshalJSON writes the span in seconds.
func (s Span) MarshalJSON() ([]byte, error) { return marshalSeconds(s) }

// UnmarshalJSON reads a span in seconds.
func (s *Span) UnmarshalJSON(b []byte) error { return unmarshalSeconds(b, s) }

// MarshalJSON writes the zone summary with its times in seconds.
func (z ZoneSummary) MarshalJSON() ([]byte, error) { return marshalSeconds(z) }

// UnmarshalJSON reads a zone summary whose times are in seconds.
func (z *ZoneSummary) UnmarshalJSON(b []byte) error { return unmarshalSeconds(b, z) }

// MarshalJSON writes the state change with its time in seconds.
func (c StateChange) MarshalJSON() ([]byte, error) { return marshalSeconds(c) }

// UnmarshalJSON reads a state change whose time is in seconds.
func (c *StateChange) UnmarshalJSON(b []byte) error { return unmarshalSeconds(b, c) }

// MarshalJSON writes the slowest pod with its times in seconds.
func (p SlowestPod) MarshalJSON() ([]byte, error) { return marshalSeconds(p) }

// UnmarshalJSON reads a slowest pod whose times are in seconds.
func (p *SlowestPod) UnmarshalJSON(b []byte) error { return unmarshalSeconds(b, p) }

// MarshalJSON writes the pending work with its times in seconds.
func (p Pending) MarshalJSON() ([]byte, error) { return marshalSeconds(p) }

// UnmarshalJSON reads pending work whose times are in seconds.
func (p *Pending) UnmarshalJSON(b []byte) error { return unmarshalSeconds(b, p) }

// MarshalJSON writes a zone's pending work with its times in seconds.
func (z ZonePending) MarshalJSON() ([]byte, error) { return marshalSeconds(z) }

// UnmarshalJSON reads a zone's pending work whose times are in seconds.
func (z *ZonePending) UnmarshalJSON(b []byte) error { return unmarshalSeconds(b, z) }

var timeDuration = reflect.TypeFor[time.Duration]()

// marshalSeconds encodes a struct as encoding/json does (exported fields,
// json tag names and omitempty, no HTML escaping), writing time.Duration
// values as seconds. Structs are always walked field by field, never
// through their own MarshalJSON, so the result types may call it.
func marshalSeconds(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := encodeSeconds(&b, reflect.ValueOf(v)); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func encodeSeconds(b *bytes.Buffer, v reflect.Value) error {
	t := v.Type()
	switch {
	case t == timeDuration:
		return encodePlain(b, time.Duration(v.Int()).Seconds())
	case t.Kind() == reflect.Pointer, t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8:
		if v.IsNil() {
			b.WriteString("null")
			return nil
		}
		if t.Kind() == reflect.Pointer {
			return encodeSeconds(b, v.Elem())
		}
		b.WriteByte('[')
		for i := range v.Len() {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := encodeSeconds(b, v.Index(i)); err != nil {
				return err
			}
		}
		b.WriteByte(']')
		return nil
	case t.Kind() == reflect.Struct:
		b.WriteByte('{')
		first := true
		for i := range t.NumField() {
			name, omitEmpty, ok := jsonName(t.Field(i))
			if !ok || omitEmpty && emptyJSON(v.Field(i)) {
				continue
			}
			if !first {
				b.WriteByte(',')
			}
			first = false
			if err := encodePlain(b, name); err != nil {
				return err
			}
			b.WriteByte(':')
			if err := encodeSeconds(b, v.Field(i)); err != nil {
				return fmt.Errorf("%s.%s: %w", t.Name(), t.Field(i).Name, err)
			}
		}
		b.WriteByte('}')
		return nil
	}
	return encodePlain(b, v.Interface())
}

// emptyJSON reports whether omitempty leaves v out: false, 0, "", a nil
// pointer, an empty slice or map.
func emptyJSON(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Slice, reflect.Map:
		return v.Len() == 0
	case reflect.Struct:
		return false
	}
	return v.IsZero()
}

// encodePlain appends x as encoding/json writes it, without HTML escaping.
func encodePlain(b *bytes.Buffer, x any) error {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(x); err != nil {
		return err
	}
	b.Truncate(b.Len() - 1) // Encode's newline
	return nil
}

// jsonName returns a field's JSON name and omitempty option, as
// encoding/json reads its tag; false for a field JSON skips.
func jsonName(f reflect.StructField) (string, bool, bool) {
	if !f.IsExported() {
		return "", false, false
	}
	name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "-" && opts == "" {
		return "", false, false
	}
	if name == "" {
		name = f.Name
	}
	return name, strings.Contains(","+opts+",", ",omitempty,"), true
}

// unmarshalSeconds decodes JSON written by marshalSeconds into the struct
// p points to.
func unmarshalSeconds(data []byte, p any) error {
	return decodeSeconds(data, reflect.ValueOf(p).Elem())
}

func decodeSeconds(data []byte, v reflect.Value) error {
	t := v.Type()
	null := string(bytes.TrimSpace(data)) == "null"
	switch {
	case t == timeDuration:
		var s float64
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		if math.IsNaN(s) || math.Abs(s) > math.MaxInt64/1e9 {
			return fmt.Errorf("policysim: %v seconds is not a duration", s)
		}
		v.SetInt(int64(math.Round(s * 1e9)))
		return nil
	case t.Kind() == reflect.Pointer:
		if null {
			v.SetZero()
			return nil
		}
		e := reflect.New(t.Elem())
		if err := decodeSeconds(data, e.Elem()); err != nil {
			return err
		}
		v.Set(e)
		return nil
	case t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8:
		if null {
			v.SetZero()
			return nil
		}
		var raws []json.RawMessage
		if err := json.Unmarshal(data, &raws); err != nil {
			return err
		}
		s := reflect.MakeSlice(t, len(raws), len(raws))
		for i, r := range raws {
			if err := decodeSeconds(r, s.Index(i)); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	case t.Kind() == reflect.Struct:
		if null {
			return nil
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(data, &fields); err != nil {
			return err
		}
		for i := range t.NumField() {
			name, _, ok := jsonName(t.Field(i))
			if raw, found := fields[name]; ok && found {
				if err := decodeSeconds(raw, v.Field(i)); err != nil {
					return fmt.Errorf("%s.%s: %w", t.Name(), t.Field(i).Name, err)
				}
			}
		}
		return nil
	}
	return json.Unmarshal(data, v.Addr().Interface())
}
