package engine

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// jsonStream reads the JSON of an answer as it arrives, byte by byte from a
// buffered reader, and keeps none of its text: a string or a number is read
// into one scratch buffer, reused, and a value not wanted is read past. So
// an answer costs what is decoded from it (encoding/json's Decoder holds the
// whole text of each value it decodes, a series' included). Strings that
// repeat within the answer — label names, job, model — are held once. Not
// safe for concurrent use.
type jsonStream struct {
	r       *bufio.Reader
	scratch []byte            // the string or number being read
	strs    map[string]string // the strings kept so far, each once
	depth   int               // arrays and objects open
}

// maxJSONDepth is the most arrays and objects open at once: an answer nests
// four deep; a hostile one must not grow the stack with its size.
const maxJSONDepth = 64

func newJSONStream(r *bufio.Reader) *jsonStream {
	return &jsonStream{r: r, strs: map[string]string{}}
}

// errCut is io.ErrUnexpectedEOF for an end of the text inside a value.
func errCut(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// peek returns the next byte that is not white space, not consumed.
func (s *jsonStream) peek() (byte, error) {
	for {
		b, err := s.r.ReadByte()
		if err != nil {
			return 0, err
		}
		switch b {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return b, s.r.UnreadByte()
	}
}

// expect reads the next byte that is not white space, which must be c.
func (s *jsonStream) expect(c byte) error {
	b, err := s.peek()
	if err != nil {
		return errCut(err)
	}
	if b != c {
		return fmt.Errorf("%q where %q belongs", b, c)
	}
	_, err = s.r.ReadByte()
	return err
}

// null reads a null if one is next, and says whether it was.
func (s *jsonStream) null() (bool, error) {
	b, err := s.peek()
	if err != nil || b != 'n' {
		return false, errCut(err)
	}
	tok, err := s.scalar()
	if err == nil && string(tok) != "null" {
		err = fmt.Errorf("%q is not a JSON value", tok)
	}
	return true, err
}

// collection reads an array or an object (open, close), calling each at
// every element, with the stream at it; each must read it.
func (s *jsonStream) collection(open, close byte, each func() error) error {
	if err := s.expect(open); err != nil {
		return err
	}
	if s.depth++; s.depth > maxJSONDepth {
		return fmt.Errorf("values nested more than %d deep", maxJSONDepth)
	}
	defer func() { s.depth-- }()
	if b, err := s.peek(); err != nil {
		return errCut(err)
	} else if b == close {
		_, err = s.r.ReadByte()
		return err
	}
	for {
		if err := each(); err != nil {
			return err
		}
		b, err := s.peek()
		if err != nil {
			return errCut(err)
		}
		if _, err := s.r.ReadByte(); err != nil {
			return err
		}
		switch b {
		case ',':
		case close:
			return nil
		default:
			return fmt.Errorf("%q where ',' or %q belongs", b, close)
		}
	}
}

// array reads an array, calling each at every element.
func (s *jsonStream) array(each func() error) error { return s.collection('[', ']', each) }

// object reads an object, calling each with every key, the stream at its
// value.
func (s *jsonStream) object(each func(key string) error) error {
	return s.collection('{', '}', func() error {
		key, err := s.str()
		if err != nil {
			return err
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		return each(key)
	})
}

// quoted reads a string and returns its text with the quotes, escapes as
// written; valid until the next read.
func (s *jsonStream) quoted() ([]byte, error) {
	if err := s.expect('"'); err != nil {
		return nil, err
	}
	s.scratch = append(s.scratch[:0], '"')
	for {
		chunk, err := s.r.ReadSlice('"')
		s.scratch = append(s.scratch, chunk...)
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err != nil:
			return nil, errCut(err)
		}
		// The quote ends the string unless an odd run of backslashes escapes it.
		escapes := 0
		for i := len(s.scratch) - 2; i > 0 && s.scratch[i] == '\\'; i-- {
			escapes++
		}
		if escapes%2 == 0 {
			return s.scratch, nil
		}
	}
}

// str reads a string, held once per answer.
func (s *jsonStream) str() (string, error) {
	q, err := s.quoted()
	if err != nil {
		return "", err
	}
	text := q[1 : len(q)-1]
	if bytes.IndexByte(text, '\\') >= 0 {
		var unquoted string
		if err := json.Unmarshal(q, &unquoted); err != nil {
			return "", err
		}
		text = []byte(unquoted)
	}
	if kept, ok := s.strs[string(text)]; ok {
		return kept, nil
	}
	kept := string(text)
	s.strs[kept] = kept
	return kept, nil
}

// optString reads a string or null ("").
func (s *jsonStream) optString() (string, error) {
	if isNull, err := s.null(); isNull || err != nil {
		return "", err
	}
	return s.str()
}

// strs reads an array of strings, or null.
func (s *jsonStream) strings() ([]string, error) {
	if isNull, err := s.null(); isNull || err != nil {
		return nil, err
	}
	var out []string
	err := s.array(func() error {
		v, err := s.str()
		out = append(out, v)
		return err
	})
	return out, err
}

// bool reads true, false or null (false).
func (s *jsonStream) bool() (bool, error) {
	tok, err := s.scalar()
	if err != nil {
		return false, err
	}
	switch string(tok) {
	case "true":
		return true, nil
	case "false", "null":
		return false, nil
	}
	return false, fmt.Errorf("%q where a boolean belongs", tok)
}

// scalar reads a number, true, false or null, unchecked; valid until the
// next read.
func (s *jsonStream) scalar() ([]byte, error) {
	if _, err := s.peek(); err != nil {
		return nil, errCut(err)
	}
	s.scratch = s.scratch[:0]
	for {
		b, err := s.r.ReadByte()
		if err != nil {
			if err == io.EOF && len(s.scratch) > 0 {
				return s.scratch, nil
			}
			return nil, errCut(err)
		}
		switch b {
		case ',', ']', '}', ':', ' ', '\t', '\r', '\n':
			if len(s.scratch) == 0 {
				return nil, fmt.Errorf("%q where a value belongs", b)
			}
			return s.scratch, s.r.UnreadByte()
		case '"', '[', '{':
			return nil, fmt.Errorf("%q inside a number or literal", b)
		}
		s.scratch = append(s.scratch, b)
	}
}

// skip reads past one value, however nested, keeping nothing of it.
func (s *jsonStream) skip() error {
	b, err := s.peek()
	if err != nil {
		return errCut(err)
	}
	switch b {
	case '{':
		return s.object(func(string) error { return s.skip() })
	case '[':
		return s.array(s.skip)
	case '"':
		_, err := s.quoted()
		return err
	}
	tok, err := s.scalar()
	if err == nil && !json.Valid(tok) {
		err = fmt.Errorf("%q is not a JSON value", tok)
	}
	return err
}
