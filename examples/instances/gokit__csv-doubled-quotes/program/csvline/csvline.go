// Package csvline splits single lines of comma-separated values.
//
// A field is either unquoted, taken verbatim up to the next comma (spaces
// included), or quoted: it starts with '"', may contain commas, and a
// doubled quote "" inside it stands for one literal '"' (RFC 4180).
package csvline

import (
	"errors"
	"fmt"
	"strings"
)

// ErrUnterminatedQuote is returned when a quoted field is not closed.
var ErrUnterminatedQuote = errors.New("csvline: unterminated quoted field")

// Split splits one line into its fields. An empty line is one empty field.
func Split(line string) ([]string, error) {
	var fields []string
	var field strings.Builder
	inQuotes := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case inQuotes:
			if c == '"' {
				inQuotes = false
			} else {
				field.WriteByte(c)
			}
		case c == '"' && field.Len() == 0:
			inQuotes = true
		case c == ',':
			fields = append(fields, field.String())
			field.Reset()
		default:
			field.WriteByte(c)
		}
	}
	if inQuotes {
		return nil, fmt.Errorf("%w (field %d)", ErrUnterminatedQuote, len(fields)+1)
	}
	return append(fields, field.String()), nil
}

// Join is the inverse of Split: it quotes the fields that need it.
func Join(fields []string) string {
	out := make([]string, len(fields))
	for i, f := range fields {
		if strings.ContainsAny(f, "\",") {
			f = `"` + strings.ReplaceAll(f, `"`, `""`) + `"`
		}
		out[i] = f
	}
	return strings.Join(out, ",")
}
