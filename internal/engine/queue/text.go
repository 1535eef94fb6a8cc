package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"unicode"
	"unicode/utf8"
)

// Text is a queue's own words on its waiting page ("Seollal holiday
// trains: Seoul → Busan", "Sales open at 07:00"): its title and message,
// each by language tag ("en", "ko"). Operator input shown to the public:
// the pages set it as text, never as markup.
type Text struct {
	Title, Message map[string]string
	// Closed is the operator's closing (Store.Close): its message is
	// empty while the sale is open.
	Closed Closing
}

// Bounds of a queue's text.
const (
	MaxTitleRunes   = 120
	MaxMessageRunes = 600
	MaxTextLangs    = 16
)

// langTag is the form of a language tag key: "en", "zh-Hant".
var langTag = regexp.MustCompile(`^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8}){0,2}$`)

// checkText checks one of the texts: language tags for keys, each value
// valid UTF-8 of at most maxRunes, no control characters (a message may
// break lines), and no bidirectional overrides or isolates, which could
// make the page read otherwise than the operator typed.
func checkText(m map[string]string, maxRunes int, lines bool) bool {
	if len(m) > MaxTextLangs {
		return false
	}
	for lang, s := range m {
		if !langTag.MatchString(lang) || !utf8.ValidString(s) || utf8.RuneCountInString(s) > maxRunes {
			return false
		}
		for _, r := range s {
			if lines && r == '\n' {
				continue
			}
			if unicode.IsControl(r) || (r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069) || r == 0x2028 || r == 0x2029 {
				return false
			}
		}
	}
	return true
}

// Text reads a queue's title and message, and its closing's (one HMGET
// of its config). A
// language with an empty text is left out.
func (s *Store) Text(ctx context.Context, queue string) (Text, error) {
	q, err := s.queue(queue)
	if err != nil {
		return Text{}, err
	}
	v, err := WaitFor(ctx, s.timeout, func(ctx context.Context) ([]any, error) {
		return s.rdb.HMGet(ctx, q.keys.config, "title", "message", "closed_message", "reopens_at_ms").Result()
	})
	if err != nil {
		return Text{}, fmt.Errorf("queue: text: %w", err)
	}
	return Text{Title: textField(v[0]), Message: textField(v[1]), Closed: closingOf(v[2], v[3])}, nil
}

// textField decodes a stored text (JSON, as UpdateSettings wrote it);
// nothing for a field never set or unreadable.
func textField(v any) map[string]string {
	s, _ := v.(string)
	var m map[string]string
	if s == "" || json.Unmarshal([]byte(s), &m) != nil {
		return map[string]string{}
	}
	for k, t := range m {
		if t == "" {
			delete(m, k)
		}
	}
	return m
}

// encodeText is a text as UpdateSettings stores it: JSON, "{}" for none.
func encodeText(m map[string]string) string {
	clean := map[string]string{}
	for k, t := range m {
		if t != "" {
			clean[k] = t
		}
	}
	b, _ := json.Marshal(clean) // strings always encode
	return string(b)
}
