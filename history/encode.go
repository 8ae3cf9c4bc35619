package history

import (
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf8"
)

// appendRecord writes rec as one JSON object, the same as json.Marshal would (field names, omitempty,
// sorted args), without reflection: records are written on the lock's hot path.
func appendRecord(b []byte, r *Record) []byte {
	b = append(b, `{"type":`...)
	b = appendString(b, string(r.Type))
	b = append(b, `,"time":`...)
	b = strconv.AppendInt(b, r.Time, 10)
	b = appendInt(b, "id", r.ID)
	b = appendStr(b, "client", r.Client)
	b = appendInt(b, "thread", r.Thread)
	b = appendStr(b, "key", r.Key)
	b = appendStr(b, "node", r.Node)
	b = appendStr(b, "owner", r.Owner)
	b = appendStr(b, "src", r.Src)
	b = appendStr(b, "f", r.F)
	if len(r.Args) > 0 {
		var room [8]string // on the stack: this runs for every record
		keys := room[:0]
		for k := range r.Args {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, `,"args":{`...)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			b = strconv.AppendInt(b, r.Args[k], 10)
		}
		b = append(b, '}')
	}
	if r.Value != nil {
		b = append(b, `,"value":`...)
		b = strconv.AppendInt(b, *r.Value, 10)
	}
	b = appendStr(b, "error", r.Error)
	b = appendStr(b, "step", r.Step)
	b = appendStr(b, "phase", r.Phase)
	if len(r.Targets) > 0 {
		b = append(b, `,"targets":[`...)
		for i, t := range r.Targets {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, t)
		}
		b = append(b, ']')
	}
	b = appendStr(b, "detail", r.Detail)
	b = appendInt(b, "enter", r.Enter)
	b = appendInt(b, "exit", r.Exit)
	b = appendInt(b, "token", r.Token)
	if r.Rejected {
		b = append(b, `,"rejected":true`...)
	}
	b = appendInt(b, "until", r.Until)
	if len(r.Data) > 0 {
		b = append(b, `,"data":`...)
		b = append(b, r.Data...)
	}
	return append(b, '}')
}

func appendInt(b []byte, name string, v int64) []byte {
	if v == 0 {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return strconv.AppendInt(b, v, 10)
}

func appendStr(b []byte, name, v string) []byte {
	if v == "" {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return appendString(b, v)
}

// appendString quotes s for JSON; anything beyond plain printable ASCII goes through encoding/json.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' || c >= utf8.RuneSelf {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
