package reqcheck

import (
	"strings"
	"unicode/utf8"
)

// FoldPath returns the decoded path p as a server that folds Unicode may
// read it (Unicode case folding, simple or full, lower or upper casing,
// NFKC compatibility normalisation: Java's and .NET's case-insensitive
// compares, a case-insensitive file system, an NFKC step in a framework):
// each non-ASCII rune that one of these turns into ASCII ("ſ" U+017F into
// "s", "Ｓ" U+FF33 into "S", "／" U+FF0F into "/", "K" U+212A into "k")
// is replaced by that ASCII in lower case; every other byte is left as it
// is. changed reports whether any rune was replaced: a gate that routes on
// bytes must then check that this reading is in the same room (issue
// 26.12).
//
// The runes and what they become are asciiFolds (foldtable.go), generated
// from golang.org/x/text and Go's unicode tables by TestFoldTable ("go
// test ./internal/hygiene/reqcheck -run TestFoldTable -args -update"), so a request
// costs a map lookup per non-ASCII rune and no normalisation.
func FoldPath(p string) (folded string, changed bool) {
	start := firstFolding(p)
	if start < 0 {
		return p, false
	}
	var b strings.Builder
	b.Grow(len(p))
	b.WriteString(p[:start])
	for i := start; i < len(p); {
		if p[i] < utf8.RuneSelf {
			b.WriteByte(p[i])
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(p[i:])
		if s, ok := asciiFolds[r]; ok {
			b.WriteString(s)
		} else {
			b.WriteString(p[i : i+n]) // as sent, even if not UTF-8
		}
		i += n
	}
	return b.String(), true
}

// firstFolding is the index in p of the first rune that asciiFolds
// replaces, -1 if none: a path of ASCII alone costs one pass over its
// bytes.
func firstFolding(p string) int {
	for i := 0; i < len(p); {
		if p[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(p[i:])
		if _, ok := asciiFolds[r]; ok {
			return i
		}
		i += n
	}
	return -1
}
